from datetime import datetime
from typing import Literal, NamedTuple

from pydantic import Field

from api.store import keys
from api.store.entity import Entity
from api.store.table import Key

RunState = Literal["running", "completed", "failed", "interrupted"]
ENDED: frozenset[RunState] = frozenset({"completed", "failed", "interrupted"})


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
