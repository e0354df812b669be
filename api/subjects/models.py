from datetime import datetime

from api.store import keys
from api.store.entity import Entity
from api.store.table import Key


class Subject(Entity):
    """`User#{email}` / `Subject#{user_id}`: the agent that holds the subject's memory,
    written in the agent's own creation transaction."""

    ENTITY = keys.SUBJECT

    created_by: str
    user_id: str
    agent_id: str
    created_at: datetime

    def key(self) -> Key:
        return keys.subject(self.created_by, self.user_id)
