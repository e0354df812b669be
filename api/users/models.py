from datetime import datetime

from api.store import keys
from api.store.entity import Entity
from api.store.table import Key


class User(Entity):
    """Seed 000's User, keeping Google's stable subject alongside the email."""

    ENTITY = keys.USER

    email: str
    name: str = ""
    picture: str | None = None
    google_sub: str | None = None
    created_at: datetime
    updated_at: datetime

    def key(self) -> Key:
        return keys.user(self.email)


class GoogleSubject(Entity):
    """Google's stable account id, mapped to the user it signed in as."""

    ENTITY = keys.GOOGLE_SUBJECT

    sub: str
    email: str

    def key(self) -> Key:
        return keys.google_subject(self.sub)
