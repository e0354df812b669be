"""The export file: JSON Lines, one record a line, framed by a header and a trailer.

```
{"type": "header", "format": "agent-memory-export", "version": 3, ...}
{"type": "agent", ...}
{"type": "subject", ...}                     seed 004's user_id, when the agent is one's
{"type": "block", ...}                       definition and lines, one per block
{"type": "capacity_warning", ...}
{"type": "archival", ...}                    oldest first, with its validity, optionally
                                             its vector
{"type": "document", ...}                    each ready document, followed by its passages
{"type": "passage", ...}                     in order, optionally with their vectors
{"type": "conversation", ...}                each followed by its messages, oldest first
{"type": "message", ...}
{"type": "memory_run", ...}                  seed 004's runs (their results: the summaries)
{"type": "end", "counts": {...}, "sha256": "..."}
```

The trailer's digest is the SHA-256 of every byte before it (the header included) and its
counts are the records of each type: a file cut short has no trailer, and a file changed
after it was written has another digest, so both are refused before anything is written.
Provider credentials are never part of an agent's records.
"""

import base64
import hashlib
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, JsonValue, TypeAdapter

from api.agents.specialists import MAX_SPECIALISTS
from api.conversations.messages.models import Role
from api.documents.models import MediaType
from api.kit.json_data import Metadata, check_storable
from api.kit.model import ApiModel
from api.memory.models import Category

FORMAT: Literal["agent-memory-export"] = "agent-memory-export"
# 2: an agent's `auto_supersede`, an archival memory's validity (`valid_from`,
# `superseded_at`, `superseded_by`). A file of version 1 reads as one without them.
# 3: an agent's `handoff_to_user` and `specialists`; a file of version 2 reads as one of an
# agent with neither. Also an agent's documents and their passages.
VERSION = 3
MEDIA_TYPE = "application/x-ndjson"
MAX_LINE_BYTES = 4 * 1024 * 1024  # an archival memory or message is far below this


def _storable_calls(calls: list[dict[str, JsonValue]]) -> list[dict[str, JsonValue]]:
    for i, call in enumerate(calls):
        check_storable(call, f"tool_calls[{i}]")
    return calls


ToolCalls = Annotated[list[dict[str, JsonValue]], AfterValidator(_storable_calls)]


class _Record(ApiModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Header(_Record):
    type: Literal["header"] = "header"
    format: Literal["agent-memory-export"] = FORMAT
    version: int
    exported_at: datetime
    source_agent_id: str = Field(min_length=1, max_length=200)
    embedding_model: str | None = None  # the model of the vectors in the file, if any


class AgentRecord(_Record):
    type: Literal["agent"] = "agent"
    agent_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    architecture: str
    provider: str
    model: str
    persona: str = ""
    event_expiry_days: int = Field(ge=0)
    recent_turns: int = Field(ge=0)
    auto_supersede: bool = True  # a file from before the setting: on, as a new agent is
    handoff_to_user: bool = False
    # The ids of its specialists where it was exported: an import names the importer's
    # agents they became (api/transfer/writer.py).
    specialists: list[str] = Field(default_factory=list, max_length=MAX_SPECIALISTS)
    metadata: Metadata = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime


class SubjectRecord(_Record):
    type: Literal["subject"] = "subject"
    user_id: str = Field(min_length=1, max_length=500)
    created_at: datetime


class BlockRecord(_Record):
    type: Literal["block"] = "block"
    name: str
    description: str = ""
    word_limit: int = Field(ge=1)
    char_limit: int | None = Field(default=None, ge=1)
    is_default: bool = False
    lines: list[str] = Field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None


class WarningRecord(_Record):
    type: Literal["capacity_warning"] = "capacity_warning"
    block: str
    warning_turns: int = Field(ge=0)


class VectorRecord(_Record):
    model: str = Field(min_length=1)
    dim: int = Field(ge=1, le=65_536)
    data: str  # base64 of little-endian float16, as the table stores it

    def packed(self) -> bytes:
        return base64.b64decode(self.data, validate=True)


class ArchivalRecord(_Record):
    type: Literal["archival"] = "archival"
    memory_id: str
    content: str = Field(min_length=1)
    content_hash: str
    created_at: datetime
    category: Category | None = None
    context: str | None = None
    confidence: float | None = Field(default=None, ge=0, le=1)
    tags: list[str] = Field(default_factory=list)
    # When it became true (absent: when it was stored); once replaced, when it stopped
    # being true and the memory (of the same file) that replaced it. Absent in files from
    # before validity: current, true since stored.
    valid_from: datetime | None = None
    superseded_at: datetime | None = None
    superseded_by: str | None = None
    vector: VectorRecord | None = None

    @property
    def current(self) -> bool:
        return self.superseded_by is None


class DocumentRecord(_Record):
    type: Literal["document"] = "document"
    document_id: str = Field(min_length=1, max_length=200)
    file_name: str = Field(min_length=1, max_length=255)
    media_type: MediaType
    content_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    size_bytes: int = Field(ge=1)
    pages: int | None = Field(default=None, ge=1)
    created_at: datetime


class PassageRecord(_Record):
    type: Literal["passage"] = "passage"
    document_id: str = Field(min_length=1, max_length=200)
    number: int = Field(ge=0)
    content: str = Field(min_length=1, max_length=20_000)
    page: int | None = Field(default=None, ge=1)
    heading: str | None = None
    vector: VectorRecord | None = None


class ConversationRecord(_Record):
    type: Literal["conversation"] = "conversation"
    conversation_id: str = Field(min_length=1, max_length=200)
    title: str = ""
    session_id: str | None = None
    created_at: datetime
    updated_at: datetime


class MessageRecord(_Record):
    type: Literal["message"] = "message"
    conversation_id: str
    message_id: str = Field(min_length=1, max_length=200)
    role: Role
    content: str = ""
    actor_id: str | None = None
    tool_calls: ToolCalls = Field(default_factory=list)
    tool_call_id: str | None = None
    interrupted: bool = False
    metadata: Metadata | None = None
    created_at: datetime
    ttl: int | None = None  # its expiry (epoch seconds), from the agent's event expiry


class MemoryRunRecord(_Record):
    type: Literal["memory_run"] = "memory_run"
    run_id: str
    conversation_id: str
    message_keys: list[str] = Field(default_factory=list)
    messages_count: int = Field(default=0, ge=0)
    queued_at: str
    state: Literal["queued", "running", "completed", "failed"]
    attempts: int = Field(default=0, ge=0)
    error: str | None = None
    result: str | None = None
    edits: int = Field(default=0, ge=0)
    created_at: datetime
    started_at: datetime | None = None
    ended_at: datetime | None = None


class Trailer(_Record):
    type: Literal["end"] = "end"
    counts: dict[str, int]
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


Record = (
    AgentRecord
    | SubjectRecord
    | BlockRecord
    | WarningRecord
    | ArchivalRecord
    | DocumentRecord
    | PassageRecord
    | ConversationRecord
    | MessageRecord
    | MemoryRunRecord
)
RECORD_TYPES = (
    "agent",
    "subject",
    "block",
    "capacity_warning",
    "archival",
    "document",
    "passage",
    "conversation",
    "message",
    "memory_run",
)
AnyLine = Annotated[Header | Record | Trailer, Field(discriminator="type")]
LINE: TypeAdapter[Header | Record | Trailer] = TypeAdapter(AnyLine)


def encode(record: Header | Record | Trailer) -> bytes:
    """One line of the file, newline included; fields left at None are left out."""
    return record.model_dump_json(exclude_none=True).encode() + b"\n"


class Digest:
    """The running SHA-256 of the lines before the trailer, and the records counted."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.counts: dict[str, int] = dict.fromkeys(RECORD_TYPES, 0)

    def add(self, line: bytes, record_type: str | None = None) -> None:
        self._hash.update(line)
        if record_type is not None:
            self.counts[record_type] += 1

    def hexdigest(self) -> str:
        return self._hash.hexdigest()

    def trailer(self) -> Trailer:
        return Trailer(counts=dict(self.counts), sha256=self.hexdigest())
