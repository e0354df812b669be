from datetime import datetime

from api.store import keys
from api.store.entity import Entity
from api.store.table import Key


class AuthSession(Entity):
    """One sign-in: every refresh token it rotates through belongs to this family."""

    ENTITY = keys.AUTH_SESSION

    family_id: str
    email: str
    created_at: datetime
    revoked: bool = False
    ttl: int

    def key(self) -> Key:
        return keys.auth_session(self.family_id)


class RefreshToken(Entity):
    """A refresh token, stored under its hash only. `rotated` marks one already used."""

    ENTITY = keys.REFRESH_TOKEN

    token_hash: str
    family_id: str
    email: str
    rotated: bool = False
    rotated_at: float | None = None
    # The token it was rotated into, encrypted with a key only this token's secret gives:
    # a replay within the grace window gets that same successor back, never a new one.
    successor: str | None = None
    ttl: int

    def key(self) -> Key:
        return keys.refresh_token(self.token_hash)


class ApiKey(Entity):
    """A machine client's key, found by the hash of the secret it presents."""

    ENTITY = keys.API_KEY

    key_hash: str
    key_id: str
    email: str
    last_used_at: datetime | None = None

    def key(self) -> Key:
        return keys.api_key(self.key_hash)


class ApiKeyRef(Entity):
    """The owner's view of a key: enough to list and revoke it, never the secret."""

    ENTITY = keys.API_KEY_REF

    email: str
    key_id: str
    key_hash: str
    name: str
    prefix: str
    created_at: datetime

    def key(self) -> Key:
        return keys.api_key_ref(self.email, self.key_id)


class OAuthNonce(Entity):
    """An ID token nonce already accepted: a second token carrying it is a replay."""

    ENTITY = keys.OAUTH_NONCE

    nonce_hash: str
    ttl: int

    def key(self) -> Key:
        return keys.oauth_nonce(self.nonce_hash)
