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
    updated_at: datetime  # its last change: a turn's, or a new title
    # When its last turn ended or messages were last stored in it (its creation before):
    # what its agent's list of conversations is ordered by. None on an item of layout 1
    # the upgrade has not reached.
    last_activity_at: datetime | None = None
    # Its last turn ended with a question for the person (handoff_to_user): set and
    # cleared by the transaction that ends each turn.
    awaiting_user: bool = False

    @property
    def active_at(self) -> datetime:
        return self.last_activity_at or self.created_at

    def key(self) -> Key:
        return keys.conversation(self.created_by, self.conversation_id)

    def index_keys(self) -> dict[str, str]:
        active = keys.time_of(self.active_at)
        return keys.conversation_index(self.agent_id, active, self.conversation_id)


class SessionLookup(Entity):
    """A client-chosen session id, resolved inside its tenant to a server-made conversation."""

    ENTITY = keys.SESSION_LOOKUP

    created_by: str
    agent_id: str
    session_id: str
    conversation_id: str

    def key(self) -> Key:
        return keys.session_lookup(self.created_by, self.agent_id, self.session_id)
