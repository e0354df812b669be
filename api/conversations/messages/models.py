from datetime import datetime
from typing import Any, Literal, NamedTuple, get_args

from pydantic import Field

from api.kit.json_data import StoredJson
from api.store import keys
from api.store.entity import Entity
from api.store.table import Key

Role = Literal["user", "assistant", "tool", "system"]
# What people and models say, a tool's plumbing left out: what is searched and recalled,
# and what seeds 002's and 004's clients may send.
SaidRole = Literal["user", "assistant", "system"]
SAID_ROLES: tuple[SaidRole, ...] = get_args(SaidRole)


class Message(Entity):
    """Seed 000's Message: pk `CONVERSATION#{id}`, sk `MESSAGE#{timestamp}#{message_id}`."""

    ENTITY = keys.MESSAGE

    conversation_id: str
    message_id: str
    role: Role
    content: str = ""
    actor_id: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    tool_call_id: str | None = None
    interrupted: bool = False
    metadata: StoredJson | None = None  # a client's own JSON (seed 002's POST /messages)
    run_id: str | None = None  # the turn that made it (GET /runs/{id}: what it used)
    created_at: datetime
    ttl: int | None = None

    def key(self) -> Key:
        return keys.message(self.conversation_id, keys.time_of(self.created_at), self.message_id)


class Said(NamedTuple):
    """Who said what in a message: what the recent conversation shows."""

    message_id: str
    role: str
    content: str
    actor_id: str | None
    interrupted: bool


class MessageRecall(Entity):
    """A message as search finds it, in its agent's partition: one query loads them all."""

    ENTITY = keys.MESSAGE_RECALL

    agent_id: str
    conversation_id: str
    message_id: str
    role: str
    content: str
    actor_id: str | None = None
    interrupted: bool = False
    metadata: StoredJson | None = None
    created_at: datetime
    ttl: int | None = None

    def key(self) -> Key:
        return keys.message_recall(self.agent_id, keys.time_of(self.created_at), self.message_id)
