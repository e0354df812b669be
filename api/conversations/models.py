from datetime import datetime

from api.store import keys
from api.store.entity import Entity
from api.store.table import Key


class Conversation(Entity):
    """Seed 000's Conversation: pk `USER#{created_by}`, sk `CONVERSATION#{conversation_id}`."""

    ENTITY = keys.CONVERSATION

    conversation_id: str
    created_by: str
    agent_id: str
    title: str = ""
    session_id: str | None = None  # the client's name for it, when it came from one
    created_at: datetime
    updated_at: datetime

    def key(self) -> Key:
        return keys.conversation(self.created_by, self.conversation_id)

    def index_keys(self) -> dict[str, str]:
        created = keys.timestamp(self.created_at.timestamp())
        return keys.conversation_index(self.agent_id, created, self.conversation_id)


class SessionLookup(Entity):
    """A client-chosen session id, resolved inside its tenant to a server-made conversation."""

    ENTITY = keys.SESSION_LOOKUP

    created_by: str
    agent_id: str
    session_id: str
    conversation_id: str

    def key(self) -> Key:
        return keys.session_lookup(self.created_by, self.agent_id, self.session_id)
