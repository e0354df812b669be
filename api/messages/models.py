from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from api.store import keys
from api.store.entity import Entity
from api.store.table import Key


class Message(Entity):
    """Seed 000's Message: pk `CONVERSATION#{id}`, sk `MESSAGE#{timestamp}#{message_id}`."""

    ENTITY = keys.MESSAGE

    conversation_id: str
    message_id: str
    role: Literal["user", "assistant", "tool", "system"]
    content: str = ""
    actor_id: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    tool_call_id: str | None = None
    interrupted: bool = False
    created_at: datetime
    ttl: int | None = None

    def key(self) -> Key:
        ts = keys.timestamp(self.created_at.timestamp())
        return keys.message(self.conversation_id, ts, self.message_id)
