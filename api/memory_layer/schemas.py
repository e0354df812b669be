"""Seed 004's bodies and responses, field for field, and ours beside them (marked as ours in
their descriptions). Requests refuse fields neither names."""

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from api.conversations.messages.models import SaidRole
from api.conversations.messages.schemas import ID_PATTERN
from api.kit.model import ApiModel
from api.kit.text import BlockName, PlainName, Visible
from api.memory import validity
from api.memory.archival import ArchivalInsert, Match
from api.memory.blocks import MAX_BLOCK_CHARS, MAX_BLOCK_NAME
from api.memory.models import ArchivalMemory
from api.memory.service import MAX_DESCRIPTION_CHARS
from api.memory_layer.render import role_of
from api.memory_runs.models import MemoryRun, RunState
from api.search.params import Since

MAX_USER_ID_CHARS = 80  # it names the subject's agent ("Memory: {user_id}")
MAX_MESSAGES = 20  # one add is one transaction: the messages, their copies and the run
MAX_MESSAGE_CHARS = 50_000
MAX_ADD_CHARS = 250_000  # all of an add's messages: the transaction stays under 4 MB
MAX_BLOCKS = 20
MAX_INFO_CHARS = 20_000
# Memories one add replaces, at most: their ends join the add's one transaction.
MAX_SUPERSEDES = 10

MemoryId = Annotated[str, Field(min_length=1, max_length=64)]

UserId = Annotated[
    PlainName,
    Field(
        min_length=1,
        max_length=MAX_USER_ID_CHARS,
        pattern=ID_PATTERN,
        description="Your name for the subject (a user, a customer): resolved among yours only.",
    ),
]
Provider = Annotated[
    str | None,
    Field(
        default=None,
        min_length=1,
        max_length=64,
        description="Ours: the provider of the subject's memory runs, one you configured "
        "(/settings/providers); `offline` when left out. Used only when the subject is made.",
    ),
]
Model = Annotated[
    str | None,
    Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Ours: the model of the subject's memory runs (with `provider`).",
    ),
]


class InitializeUserRequest(ApiModel):
    model_config = ConfigDict(extra="forbid")

    user_id: UserId
    user_info: str | None = Field(
        default=None,
        max_length=MAX_INFO_CHARS,
        description="The `human` block's first lines (a new subject only).",
    )
    reset: bool = Field(
        default=False, strict=True, description="true: delete the subject and start anew."
    )
    provider: Provider = None
    model: Model = None


class BlockIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    label: Annotated[BlockName, Field(min_length=1, max_length=MAX_BLOCK_NAME)]
    description: str = Field(default="", max_length=MAX_DESCRIPTION_CHARS)
    value: str = Field(default="", max_length=MAX_BLOCK_CHARS, description="Its first lines.")
    char_limit: int | None = Field(
        default=None,
        strict=True,
        ge=1,
        le=MAX_BLOCK_CHARS,
        description="Characters the block may hold (warned at 80%); unlimited but for the "
        "word limit when left out.",
    )


class InitializeWithBlocksRequest(ApiModel):
    model_config = ConfigDict(extra="forbid")

    user_id: UserId
    blocks: list[BlockIn] = Field(default_factory=list, max_length=MAX_BLOCKS)
    reset: bool = Field(default=False, strict=True)
    provider: Provider = None
    model: Model = None


class InitializeResponse(ApiModel):
    success: bool = True
    message: str
    agent_id: str
    blocks_created: int = Field(
        description="The subject's blocks: `human`, `summary` and the custom ones."
    )


class MemoryLayerMessageIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    role: SaidRole
    content: Annotated[Visible, Field(min_length=1, max_length=MAX_MESSAGE_CHARS)]
    valid_from: Since | None = Field(
        default=None,
        description="Ours: when what it says became true (a date, or a date and time), for "
        "its archival memory (needs store_in_archival); default: now.",
    )
    supersedes: list[MemoryId] = Field(
        default_factory=list,
        max_length=MAX_SUPERSEDES,
        description="Ours: ids of archival memories its archival memory replaces (each "
        "kept, as history, ended when this one became true). Needs store_in_archival; "
        f"at most {MAX_SUPERSEDES} in one add, each named by one message.",
    )


class AddConversationRequest(ApiModel):
    model_config = ConfigDict(extra="forbid")

    user_id: UserId
    messages: list[MemoryLayerMessageIn] = Field(min_length=1, max_length=MAX_MESSAGES)
    store_in_archival: bool = Field(
        default=True,
        strict=True,
        description="Also keep each message in archival memory (searchable).",
    )
    wait_for_completion: bool = Field(
        default=True,
        strict=True,
        description="Answer when the memory run has ended (up to MEMORY_RUN_WAIT_SECONDS; "
        "past it 202 with the run's status); false: 202 at once.",
    )

    @model_validator(mode="after")
    def _fits_one_transaction(self) -> "AddConversationRequest":
        total = sum(len(m.content) for m in self.messages)
        if total > MAX_ADD_CHARS:
            raise ValueError(
                f"the messages hold {total} characters; one add takes at most {MAX_ADD_CHARS}"
            )
        return self


class ReplacedOut(ApiModel):
    """Ours: an archival memory a write replaced (or was asked to), as it is now."""

    id: str
    content: str
    valid_from: datetime = Field(description="When it became true.")
    superseded_at: datetime | None = Field(description="When it stopped being true.")
    superseded_by: str | None = Field(description="The memory that replaced it.")

    @classmethod
    def of(cls, memory: ArchivalMemory) -> "ReplacedOut":
        return cls(
            id=memory.memory_id,
            content=memory.content,
            valid_from=memory.valid_since,
            superseded_at=memory.superseded_at,
            superseded_by=memory.superseded_by,
        )


Replaced = Annotated[
    list[ReplacedOut],
    Field(default_factory=list, description="Ours: the memories the messages replaced."),
]
NotReplaced = Annotated[
    list[ReplacedOut],
    Field(
        default_factory=list,
        description="Ours: memories named in `supersedes` that another write had replaced "
        "first (left as they are).",
    ),
]
Notes = Annotated[
    list[str],
    Field(
        default_factory=list,
        description="Ours: the replacements as a person reads them: \"Replaced: 'I live in "
        "Lisbon' (2025-03-02) → 'I live in Porto'\".",
    ),
]


def replacements(inserts: Sequence[ArchivalInsert]) -> dict[str, Any]:
    """`replaced`, `not_replaced` and `notes`, for a response that has them, from the
    inserts that replaced memories."""
    return {
        "replaced": [ReplacedOut.of(m) for i in inserts for m in i.replaced],
        "not_replaced": [ReplacedOut.of(m) for i in inserts for m in i.not_replaced],
        "notes": [line for i in inserts for line in validity.replacement_lines(i)],
    }


class AddConversationResponse(ApiModel):
    success: bool = True
    run_id: str
    message: str
    messages_count: int
    status: RunState = Field(description="Ours: the memory run's state when this answered.")
    replaced: Replaced
    not_replaced: NotReplaced
    notes: Notes


class MemoryOut(ApiModel):
    """Ours: where a relevant memory came from, and how it ranked."""

    id: str
    content: str
    source: Literal["archival"] = "archival"
    role: str | None = Field(description="Who said it (its tag), when it came from /add.")
    tags: list[str]
    score: float
    similarity: float | None
    created_at: datetime
    valid_from: datetime = Field(description="When it became true (its creation, unless given).")
    superseded_at: datetime | None = Field(
        default=None,
        description="When it stopped being true (shown as `(until 2025-06-01)`); null while "
        "it is current.",
    )
    superseded_by: str | None = Field(default=None, description="The memory that replaced it.")

    @classmethod
    def of(cls, match: Match) -> "MemoryOut":
        memory = match.memory
        return cls(
            id=memory.memory_id,
            content=memory.content,
            role=role_of(memory.tags),
            tags=memory.tags,
            score=match.score,
            similarity=match.similarity,
            created_at=memory.created_at,
            valid_from=memory.valid_since,
            superseded_at=memory.superseded_at,
            superseded_by=memory.superseded_by,
        )


class FullContextResponse(ApiModel):
    success: bool = True
    user_context: str
    summary: str = Field(description="The summary block; empty with include_summary=false.")
    relevant_memories: list[str]
    combined_context: str
    memories: list[MemoryOut] = Field(description="Ours: relevant_memories with provenance.")
    pending_runs: int = Field(
        description="Ours: memory runs of the subject not ended yet (memory is still being "
        "updated while this is above 0)."
    )
    truncated: bool = Field(
        default=False,
        description="Ours: true when token_budget left blocks or memories out.",
    )
    estimated_tokens: int = Field(description="Ours: combined_context's size, at 4 chars/token.")


class ContextResponse(ApiModel):
    success: bool = True
    context: str


class SummaryResponse(ApiModel):
    success: bool = True
    summary: str


class SearchResult(ApiModel):
    success: bool = True
    results: list[str]
    count: int
    total_found: int
    memories: list[MemoryOut] = Field(description="Ours: the results with provenance.")


class DeleteResponse(ApiModel):
    success: bool = True
    message: str


class AgentIdResponse(ApiModel):
    success: bool = True
    agent_id: str
    dashboard_url: str


class MemoryRunOut(ApiModel):
    """Ours: a memory run as it stands."""

    success: bool = True
    run_id: str
    user_id: str
    agent_id: str
    status: RunState
    messages_count: int
    attempts: int
    error: str | None
    result: str | None = Field(description="What the memory agent said it did.")
    edits: int = Field(description="Tool calls its last attempt made.")
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None

    @classmethod
    def of(cls, run: MemoryRun) -> "MemoryRunOut":
        return cls(
            run_id=run.run_id,
            user_id=run.subject_id,
            agent_id=run.agent_id,
            status=run.state,
            messages_count=run.messages_count,
            attempts=run.attempts,
            error=run.error,
            result=run.result,
            edits=run.edits,
            created_at=run.created_at,
            started_at=run.started_at,
            ended_at=run.ended_at,
        )
