"""An agent as an export file, streamed: each kind of item is read a page at a time and
written out as lines before the next page is read, so an agent of any size costs one page of
memory. Pages are encoded on a worker thread, off the event loop."""

import asyncio
import base64
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime

from api.agents.models import Agent
from api.conversations.messages.models import Message
from api.conversations.models import Conversation
from api.documents.models import Document, Passage
from api.kit.clock import Clock
from api.kit.json_data import plain
from api.memory.models import ArchivalMemory
from api.memory_runs.models import MemoryRun
from api.repositories import Repositories
from api.search import vectors
from api.store.table import Item
from api.transfer.format import (
    VERSION,
    AgentRecord,
    ArchivalRecord,
    BlockRecord,
    ConversationRecord,
    Digest,
    DocumentRecord,
    Header,
    MemoryRunRecord,
    MessageRecord,
    PassageRecord,
    Record,
    SubjectRecord,
    VectorRecord,
    WarningRecord,
    encode,
)

PAGE = 500  # items read, encoded and sent at a time
SUBJECT_KEY = "memory_subject"  # seed 004 names the subject in its agent's metadata


def _lines(records: Sequence[Record], digest: Digest) -> bytes:
    out = bytearray()
    for record in records:
        line = encode(record)
        digest.add(line, record.type)
        out += line
    return bytes(out)


async def _encoded(records: Sequence[Record], digest: Digest) -> bytes:
    # Small pages are cheaper here than a thread hop; large ones would hold the loop.
    if len(records) < 50:
        return _lines(records, digest)
    return await asyncio.to_thread(_lines, records, digest)


def agent_record(agent: Agent) -> AgentRecord:
    return AgentRecord(
        agent_id=agent.agent_id,
        name=agent.agent_name,
        architecture=agent.agent_architecture,
        provider=agent.agent_provider,
        model=agent.agent_model,
        persona=agent.agent_persona,
        event_expiry_days=agent.event_expiry_days,
        recent_turns=agent.recent_turns,
        auto_supersede=agent.auto_supersede,
        handoff_to_user=agent.handoff_to_user,
        specialists=agent.specialists,
        metadata=plain(agent.metadata) or {},
        created_at=agent.created_at,
        updated_at=agent.updated_at,
    )


def _vector(item: Item) -> VectorRecord | None:
    data, model, dim = (
        item.get(vectors.EMBEDDING),
        item.get(vectors.EMBEDDING_MODEL),
        item.get(vectors.EMBEDDING_DIM),
    )
    if not isinstance(data, bytes | bytearray) or not isinstance(model, str):
        return None
    if not isinstance(dim, int) or len(data) != 2 * dim:
        return None  # a damaged vector: the importer embeds the text again
    return VectorRecord(model=model, dim=dim, data=base64.b64encode(bytes(data)).decode())


def archival_record(
    memory_item: ArchivalMemory, item: Item, *, with_vector: bool
) -> ArchivalRecord:
    return ArchivalRecord(
        memory_id=memory_item.memory_id,
        content=memory_item.content,
        content_hash=memory_item.content_hash,
        created_at=memory_item.created_at,
        category=memory_item.category,
        context=memory_item.context,
        confidence=memory_item.confidence,
        tags=memory_item.tags,
        valid_from=memory_item.valid_from,
        superseded_at=memory_item.superseded_at,
        superseded_by=memory_item.superseded_by,
        vector=_vector(item) if with_vector else None,
    )


def document_record(document: Document) -> DocumentRecord:
    return DocumentRecord(
        document_id=document.document_id,
        file_name=document.file_name,
        media_type=document.media_type,
        content_hash=document.content_hash,
        size_bytes=document.size_bytes,
        pages=document.pages,
        created_at=document.created_at,
    )


def passage_record(item: Item, *, with_vector: bool) -> PassageRecord:
    passage = Passage.from_dynamo_item(item)
    return PassageRecord(
        document_id=passage.document_id,
        number=passage.number,
        content=passage.content,
        page=passage.page,
        heading=passage.heading,
        vector=_vector(item) if with_vector else None,
    )


def conversation_record(conversation: Conversation) -> ConversationRecord:
    return ConversationRecord(
        conversation_id=conversation.conversation_id,
        title=conversation.title,
        session_id=conversation.session_id,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
    )


def message_record(message: Message) -> MessageRecord:
    return MessageRecord(
        conversation_id=message.conversation_id,
        message_id=message.message_id,
        role=message.role,
        content=message.content,
        actor_id=message.actor_id,
        tool_calls=plain(message.tool_calls) or [],
        tool_call_id=message.tool_call_id,
        interrupted=message.interrupted,
        metadata=plain(message.metadata),
        created_at=message.created_at,
        ttl=message.ttl,
    )


def run_record(run: MemoryRun) -> MemoryRunRecord:
    return MemoryRunRecord(
        run_id=run.run_id,
        conversation_id=run.conversation_id,
        message_keys=run.message_keys,
        messages_count=run.messages_count,
        queued_at=run.queued_at,
        state=run.state,
        attempts=run.attempts,
        error=run.error,
        result=run.result,
        edits=run.edits,
        created_at=run.created_at,
        started_at=run.started_at,
        ended_at=run.ended_at,
    )


async def export_agent(
    repos: Repositories, agent: Agent, clock: Clock, *, with_vectors: bool = True
) -> AsyncIterator[bytes]:
    """The agent's export file, a chunk of lines at a time. The agent is the caller's (an
    owned agent): every read below is in its partitions or filtered to its owner."""
    digest = Digest()
    agent_id = agent.agent_id
    header = Header(
        version=VERSION,
        exported_at=datetime.fromtimestamp(clock.now(), UTC),
        source_agent_id=agent_id,
    )
    first = encode(header)
    digest.add(first)
    head: list[Record] = [agent_record(agent)]
    subject_id = agent.metadata.get(SUBJECT_KEY) if isinstance(agent.metadata, dict) else None
    if isinstance(subject_id, str) and subject_id:
        subject = await repos.subjects.get(agent.created_by, subject_id)
        if subject is not None and subject.agent_id == agent_id:
            head.append(SubjectRecord(user_id=subject.user_id, created_at=subject.created_at))
    blocks, warnings = await repos.memory.blocks_and_warnings(agent_id)
    for definition, core in blocks:
        head.append(
            BlockRecord(
                name=definition.block_name,
                description=definition.description,
                word_limit=definition.word_limit,
                char_limit=definition.char_limit,
                is_default=definition.is_default,
                lines=core.lines if core else [],
                created_at=definition.created_at,
                updated_at=core.updated_at if core else None,
            )
        )
    head += [WarningRecord(block=b, warning_turns=n) for b, n in sorted(warnings.items())]
    yield first + await _encoded(head, digest)

    # The biggest kind: the next page is read while this one is encoded and sent.
    reading = asyncio.ensure_future(
        repos.memory.archival_items_page(agent_id, limit=PAGE, cursor=None)
    )
    cursor: str | None
    try:
        while True:
            found, cursor = await reading
            if cursor is not None:
                reading = asyncio.ensure_future(
                    repos.memory.archival_items_page(agent_id, limit=PAGE, cursor=cursor)
                )
            records: list[Record] = [
                archival_record(m, item, with_vector=with_vectors) for m, item in found
            ]
            if records:
                yield await _encoded(records, digest)
            if cursor is None:
                break
    finally:
        reading.cancel()  # a reader that stopped early leaves no read behind

    # Ready documents, oldest first, each followed by its passages in order (one that is
    # still processing or failed has nothing to carry yet).
    listed_documents = await repos.documents.list_for(agent_id)
    for document in sorted(listed_documents, key=lambda d: (d.created_at, d.document_id)):
        if document.state != "ready":
            continue
        items = await repos.documents.passage_items(agent_id, document.document_id)
        records = [document_record(document)]
        records += [passage_record(item, with_vector=with_vectors) for item in items]
        yield await _encoded(records, digest)

    owner = agent.created_by
    cursor = None
    while True:
        listed, cursor = await repos.conversations.list_for_agent(
            agent_id, limit=100, cursor=cursor
        )
        for conversation in listed:
            # The index groups conversations by agent id alone: keep the owner's only.
            if conversation.created_by != owner:
                continue
            yield await _encoded([conversation_record(conversation)], digest)
            message_cursor: str | None = None
            while True:
                page, message_cursor = await repos.messages.oldest_first(
                    conversation.conversation_id, limit=PAGE, cursor=message_cursor
                )
                if page:
                    yield await _encoded([message_record(m) for m in page], digest)
                if message_cursor is None:
                    break
        if cursor is None:
            break

    cursor = None
    while True:
        runs, cursor = await repos.memory_runs.runs_page(agent_id, limit=PAGE, cursor=cursor)
        if runs:
            yield await _encoded([run_record(r) for r in runs], digest)
        if cursor is None:
            break
    yield encode(digest.trailer())
