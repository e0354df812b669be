"""Pass 1 of an import: every record of the file checked before anything is written.

The checker sees records in file order and refuses, with the line and what is wrong, what
the writer could not store whole: a record out of place, a block or memory the memory
rules refuse, a message of a conversation not declared before it, a vector that does not
decode. With the file's digest and counts (`format.Digest`), a file cut short or changed
after export is refused too.
"""

import binascii
from dataclasses import dataclass, field
from datetime import UTC, timedelta

from api.memory import blocks
from api.memory import repository as memory
from api.memory.archival import MAX_CONTENT_CHARS, hash_matches
from api.transfer.errors import InvalidImportFile
from api.transfer.format import (
    AgentRecord,
    ArchivalRecord,
    BlockRecord,
    ConversationRecord,
    DocumentRecord,
    MemoryRunRecord,
    MessageRecord,
    PassageRecord,
    Record,
    SubjectRecord,
    VectorRecord,
    WarningRecord,
)

MAX_BLOCKS = 200


ID_TIME_TOLERANCE = timedelta(milliseconds=1)


def refuse(line: int | None, problem: str) -> InvalidImportFile:
    where = f"Line {line}: " if line is not None else ""
    return InvalidImportFile(f"{where}{problem} Nothing was imported.", line=line)


@dataclass
class Checker:
    """Feed it every record in order, then `finish()`."""

    agent: AgentRecord | None = None
    counts: dict[str, int] = field(default_factory=dict)
    _blocks: set[str] = field(default_factory=set)
    _conversations: set[str] = field(default_factory=set)
    _current: str | None = None  # the conversation whose messages may follow
    _documents: set[str] = field(default_factory=set)
    _document: str | None = None  # the document whose passages may follow...
    _passage: int = -1  # ...after this one of them
    _seen_after_agent: bool = False

    def check(self, record: Record, line: int | None) -> None:
        self.counts[record.type] = self.counts.get(record.type, 0) + 1
        if isinstance(record, AgentRecord):
            if self.agent is not None:
                raise refuse(line, "A file holds one agent; this is a second.")
            self.agent = record
            return
        if self.agent is None:
            raise refuse(line, f"A {record.type!r} record comes before the agent's record.")
        if isinstance(record, SubjectRecord):
            if self.counts["subject"] > 1:
                raise refuse(line, "An agent is the memory of one subject at most.")
        elif isinstance(record, BlockRecord):
            self._block(record, line)
        elif isinstance(record, WarningRecord):
            if record.block not in self._blocks:
                raise refuse(line, f"A capacity warning of block {record.block!r}, not declared.")
        elif isinstance(record, ArchivalRecord):
            self._archival(record, line)
        elif isinstance(record, DocumentRecord):
            if record.document_id in self._documents:
                raise refuse(line, f"Document {record.document_id!r} comes twice.")
            self._documents.add(record.document_id)
            self._document, self._passage = record.document_id, -1
        elif isinstance(record, PassageRecord):
            self._passage_of(record, line)
        elif isinstance(record, ConversationRecord):
            if record.conversation_id in self._conversations:
                raise refuse(line, f"Conversation {record.conversation_id!r} comes twice.")
            self._conversations.add(record.conversation_id)
            self._current = record.conversation_id
        elif isinstance(record, MessageRecord):
            if record.conversation_id != self._current:
                raise refuse(
                    line,
                    f"A message of conversation {record.conversation_id!r} does not follow "
                    "that conversation's record.",
                )
        elif isinstance(record, MemoryRunRecord):
            if record.conversation_id not in self._conversations:
                raise refuse(line, f"Memory run {record.run_id!r} names an unknown conversation.")
            if not record.run_id.startswith("run_"):
                raise refuse(line, f"{record.run_id!r} is not a memory run's id.")

    def _passage_of(self, record: PassageRecord, line: int | None) -> None:
        if record.document_id != self._document:
            raise refuse(
                line,
                f"A passage of document {record.document_id!r} does not follow that "
                "document's record.",
            )
        if record.number != self._passage + 1:
            raise refuse(
                line,
                f"Passage {record.number} of document {record.document_id!r} is out of order "
                f"(passage {self._passage + 1} was due).",
            )
        self._passage = record.number
        if record.vector is not None:
            self._vector(record.vector, line)

    def _vector(self, vector: VectorRecord, line: int | None) -> None:
        try:
            size = len(vector.packed())
        except (binascii.Error, ValueError):
            raise refuse(line, "A vector's data is not base64.") from None
        if size != 2 * vector.dim:
            raise refuse(line, f"A vector's data does not hold {vector.dim} values.")

    def _block(self, record: BlockRecord, line: int | None) -> None:
        if not blocks.is_valid_block_name(record.name):
            raise refuse(line, f"{record.name!r} is not a block name (a-z, 0-9 and _).")
        if record.name in self._blocks:
            raise refuse(line, f"Block {record.name!r} comes twice.")
        if len(self._blocks) >= MAX_BLOCKS:
            raise refuse(line, f"An agent has at most {MAX_BLOCKS} blocks.")
        if record.word_limit > blocks.MAX_WORD_LIMIT:
            raise refuse(line, f"A word limit is at most {blocks.MAX_WORD_LIMIT}.")
        if record.char_limit is not None and record.char_limit > blocks.MAX_BLOCK_CHARS:
            raise refuse(line, f"A character limit is at most {blocks.MAX_BLOCK_CHARS}.")
        for text in record.lines:
            if blocks.clean_line(text) != text or not text:
                raise refuse(line, f"Block {record.name!r} has a line that is not one clean line.")
            if len(text) > blocks.MAX_LINE_CHARS:
                raise refuse(
                    line, f"Block {record.name!r} has a line over {blocks.MAX_LINE_CHARS} chars."
                )
        self._blocks.add(record.name)

    def _archival(self, record: ArchivalRecord, line: int | None) -> None:
        minted = memory.created_at_of(record.memory_id)
        if minted is None:
            raise refuse(line, f"{record.memory_id!r} is not an archival memory's id.")
        # An id carries the memory's time (its place in the agent's partition, the date
        # the model is shown, time-aware ranking): one that disagrees with the record's
        # own time was not made by this service, and would date the memory wrongly.
        made = (
            record.created_at if record.created_at.tzinfo else record.created_at.replace(tzinfo=UTC)
        )
        if abs(minted - made) > ID_TIME_TOLERANCE:
            raise refuse(
                line,
                f"Memory {record.memory_id}'s id dates it {minted.isoformat()}, its record "
                f"{made.isoformat()}: the id was not made for it.",
            )
        if len(record.content) > MAX_CONTENT_CHARS:
            raise refuse(line, f"An archival memory holds at most {MAX_CONTENT_CHARS} chars.")
        # The hash of the normalized text, or (memories stored, files exported, before
        # texts were normalized) of the text as written: the writer keys the memory anew.
        if not hash_matches(record.content, record.content_hash):
            raise refuse(line, f"Memory {record.memory_id}'s hash does not match its content.")
        # Replaced once, by another memory, at a moment: both said, or neither. (The
        # replacement may be missing from the file: an export is no snapshot.)
        if (record.superseded_at is None) != (record.superseded_by is None):
            raise refuse(
                line,
                f"Memory {record.memory_id} gives one of superseded_at and superseded_by "
                "without the other.",
            )
        by = record.superseded_by
        if by is not None and (by == record.memory_id or memory.created_at_of(by) is None):
            raise refuse(line, f"Memory {record.memory_id} is superseded by {by!r}, no memory.")
        if record.vector is not None:
            self._vector(record.vector, line)

    def finish(self) -> AgentRecord:
        if self.agent is None:
            raise refuse(None, "The file holds no agent.")
        return self.agent
