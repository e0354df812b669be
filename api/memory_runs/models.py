from datetime import datetime
from typing import Literal

from pydantic import Field

from api.store import keys
from api.store.entity import Entity
from api.store.table import Key

RunState = Literal["queued", "running", "completed", "failed"]
ENDED: frozenset[RunState] = frozenset({"completed", "failed"})


class MemoryRun(Entity):
    """One `POST /memory/add`'s messages, processed by the subject's memory agent:
    queued, then running (again after a failed attempt or a crash), then completed or
    failed."""

    ENTITY = keys.MEMORY_RUN

    run_id: str
    agent_id: str
    user_email: str
    subject_id: str  # seed 004's user_id
    conversation_id: str  # the subject's session, where the messages are
    message_keys: list[str] = Field(default_factory=list)  # their sort keys, in order
    messages_count: int = 0
    queued_at: str  # its place in the subject's queue (a sort-key timestamp)
    state: RunState = "queued"
    attempts: int = 0
    error: str | None = None  # why the last attempt failed
    result: str | None = None  # what the memory agent said it did
    edits: int = 0  # tool calls of the last attempt
    worker: str | None = None  # the process of the last attempt (api/runs/process.py token)
    created_at: datetime
    started_at: datetime | None = None  # the last attempt's start
    ended_at: datetime | None = None

    def key(self) -> Key:
        return keys.memory_run(self.agent_id, self.run_id)

    @property
    def ended(self) -> bool:
        return self.state in ENDED


class MemoryRunQueued(Entity):
    """A run not ended yet, in its subject's queue: the oldest is the next to do."""

    ENTITY = keys.MEMORY_RUN_QUEUED

    agent_id: str
    run_id: str
    queued_at: str

    def key(self) -> Key:
        return keys.memory_run_queued(self.agent_id, self.queued_at, self.run_id)


class PendingMemoryRun(Entity):
    """A run not ended yet, in a few shared partitions, with the process that last took
    charge of it: what the sweep reads to send again what a dead process left."""

    ENTITY = keys.PENDING_MEMORY_RUN

    run_id: str
    agent_id: str
    host: str
    pid: int
    token: str
    touched_at: float  # when a process last took charge of it (accepted, sent or started)

    def key(self) -> Key:
        return keys.pending_memory_run(self.run_id)


class MemoryLease(Entity):
    """The one process working on a subject's runs, on any replica; `ttl` is its expiry."""

    ENTITY = keys.MEMORY_LEASE

    agent_id: str
    holder: str  # a worker: its process token and number
    host: str
    pid: int
    token: str
    ttl: int

    def key(self) -> Key:
        return keys.memory_lease(self.agent_id)
