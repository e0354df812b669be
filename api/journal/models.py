from datetime import datetime
from typing import Literal, NamedTuple

from pydantic import Field

from api.kit.model import ApiModel
from api.store import keys
from api.store.entity import Entity
from api.store.table import Key

RunState = Literal["running", "completed", "failed", "interrupted"]
ENDED: frozenset[RunState] = frozenset({"completed", "failed", "interrupted"})


SourceKind = Literal["archival", "message", "passage"]
RECENT_CONVERSATION = "recent_conversation"  # how the continuity hook's messages came in


class Source(ApiModel):
    """An archival memory, a past message or a passage of a document that entered a turn's
    context: put into its prompt by a hook, or returned to its model by a search tool."""

    kind: SourceKind
    id: str = Field(
        description="The archival memory's id, the message's, or a passage's "
        "(`{document_id}:{number}`)"
    )
    via: str = Field(
        description="How it came in: `recent_conversation` (the continuity hook's last turns), "
        "a tool's name (`archival_memory_search`, `search_memories`, `list_memories`, "
        "`retrieve`), or another hook's own name"
    )
    score: float | None = Field(
        default=None, description="The search's score; none for what came by recency"
    )
    similarity: float | None = Field(
        default=None, description="Its cosine similarity to the query, when searched by meaning"
    )
    preview: str = Field(default="", description="The start of its text, on one line")
    conversation_id: str | None = Field(default=None, description="A message's conversation")


class SourceBlock(ApiModel):
    """A core memory block the turn's prompt held, at the version it was read."""

    label: str
    version: int


class Sources(ApiModel):
    """What a turn used: the memories and messages that entered its context, in the order
    they did (the first MAX_SOURCES; `left_out` counts the rest), and the blocks its
    prompt held."""

    items: list[Source] = Field(default_factory=list)
    blocks: list[SourceBlock] = Field(default_factory=list)
    left_out: int = 0


class Run(Entity):
    """A turn: whose it is, where it runs, and how it ended. Readers find its events in its
    partition; `watched_until` is when the last reader following it said it still was."""

    ENTITY = keys.RUN

    run_id: str
    user_email: str
    agent_id: str
    conversation_id: str
    state: RunState = "running"
    created_at: datetime
    ended_at: datetime | None = None
    watched_until: float | None = None
    ttl: int | None = None  # the turn's expiry: its messages' and its events'
    sources: Sources | None = None  # what it used, written with its end

    def key(self) -> Key:
        return keys.run(self.run_id)

    @property
    def ended(self) -> bool:
        return self.state in ENDED


class StoredEvent(NamedTuple):
    """One event of a batch, numbered as its SSE `id`."""

    number: int
    event: str  # the SSE event name
    data: str  # its data as sent: JSON text


class RunEvents(Entity):
    """A batch of a run's events, from `first` on, in order. Data stays the JSON text that
    was sent, so that a replay sends the same bytes."""

    ENTITY = keys.RUN_EVENTS

    run_id: str
    first: int
    events: list[list[str]] = Field(default_factory=list)  # [event name, data JSON]
    ttl: int | None = None

    def key(self) -> Key:
        return keys.run_events(self.run_id, self.first)

    def numbered(self) -> list[StoredEvent]:
        return [
            StoredEvent(number=self.first + i, event=name, data=data)
            for i, (name, data) in enumerate(self.events)
        ]


class LiveRun(Entity):
    """A run not yet ended, in one of a few shared partitions: at start, a process looks
    here for turns whose process died, and marks them interrupted."""

    ENTITY = keys.LIVE_RUN

    run_id: str
    conversation_id: str
    host: str  # the process driving it (api/runs/process.py)
    pid: int
    token: str

    def key(self) -> Key:
        return keys.live_run(self.run_id)
