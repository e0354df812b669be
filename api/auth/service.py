"""Sessions (access token + rotating refresh token) and API keys."""

import contextlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NoReturn

from api.auth import repository
from api.auth.models import ApiKey, ApiKeyRef, AuthSession, OAuthNonce, RefreshToken
from api.auth.tokens import TokenIssuer
from api.errors import AppError, NotFound
from api.kit.clock import Clock
from api.kit.crypto import KeyRing
from api.kit.secrets import digest, new_id, new_secret
from api.repositories import Repositories
from api.store.table import ConditionFailed, TransactionCancelled

log = logging.getLogger(__name__)

REFRESH_PREFIX = "amr_"
API_KEY_PREFIX = "amk_"
SHOWN_PREFIX = 12  # characters of an API key shown in listings: enough to tell keys apart
LAST_USED_RESOLUTION = timedelta(minutes=1)  # at most one write per key per minute
NONCE_MEMORY = timedelta(days=2)
# Tabs of one SPA refresh at once with the same cookie. A token presented again this soon
# after its rotation gets a sibling in its family instead of ending it; later, it is theft.
REUSE_GRACE_SECONDS = 10.0


class NotAuthenticated(AppError):
    status_code = 401
    code = "not_authenticated"


class InvalidRefreshToken(AppError):
    status_code = 401
    code = "invalid_refresh_token"


class RefreshTokenReused(AppError):
    status_code = 401
    code = "refresh_token_reused"


class InvalidApiKey(AppError):
    status_code = 401
    code = "invalid_api_key"


class ApiKeyNotFound(NotFound):
    code = "api_key_not_found"


class NonceReplayed(AppError):
    status_code = 400
    code = "nonce_replayed"


@dataclass(frozen=True)
class SessionTokens:
    access_token: str
    expires_in: int
    refresh_token: str
    refresh_max_age: int


def _at(clock: Clock) -> datetime:
    return datetime.fromtimestamp(clock.now(), tz=UTC)


def _new_refresh(family_id: str, email: str, ttl: int) -> tuple[str, RefreshToken]:
    secret = new_secret(REFRESH_PREFIX)
    token = RefreshToken(token_hash=digest(secret), family_id=family_id, email=email, ttl=ttl)
    return secret, token


def _tokens(
    issuer: TokenIssuer, email: str, family_id: str, refresh: str, ttl: int, clock: Clock
) -> SessionTokens:
    now = clock.now()
    return SessionTokens(
        access_token=issuer.issue(email, now=now, session_id=family_id),
        expires_in=issuer.lifetime_seconds,
        refresh_token=refresh,
        refresh_max_age=max(0, ttl - int(now)),
    )


async def start_session(
    repos: Repositories, email: str, issuer: TokenIssuer, refresh_days: int, clock: Clock
) -> SessionTokens:
    ttl = int(clock.now()) + refresh_days * 86400
    session = AuthSession(family_id=new_id(), email=email, created_at=_at(clock), ttl=ttl)
    secret, token = _new_refresh(session.family_id, email, ttl)
    await repos.auth.start_session(session, token)
    return _tokens(issuer, email, session.family_id, secret, ttl, clock)


async def refresh(
    repos: Repositories, presented: str | None, issuer: TokenIssuer, clock: Clock
) -> SessionTokens:
    """A new access token and the next refresh token; a reused one revokes its family,
    except within REUSE_GRACE_SECONDS of its rotation (two tabs refreshing at once), when
    it gets the same successor as the first use: never a second branch."""
    if not presented or not presented.startswith(REFRESH_PREFIX):
        raise InvalidRefreshToken("Sign in again.")
    old = await repos.auth.get_refresh_token(digest(presented))
    if old is None:
        raise InvalidRefreshToken("Sign in again.")
    now = clock.now()
    if old.rotated:
        secret = await _successor(repos, old, presented, now)
    else:
        secret, new = _new_refresh(old.family_id, old.email, old.ttl)
        sealed = _seal(presented, old, secret)
        try:
            await repos.auth.rotate(old, new, now, sealed)
        except TransactionCancelled as e:
            if not e.failed(repository.ROTATION):  # the family was revoked
                raise InvalidRefreshToken("This session has ended; sign in again.") from e
            current = await repos.auth.get_refresh_token(old.token_hash)
            secret = await _successor(repos, current or old, presented, now)
    return _tokens(issuer, old.email, old.family_id, secret, old.ttl, clock)


def _seal(presented: str, token: RefreshToken, successor: str) -> str:
    return KeyRing(presented).encrypt(successor.encode(), token.token_hash.encode())


async def _successor(repos: Repositories, used: RefreshToken, presented: str, now: float) -> str:
    """The secret `used` was rotated into, for a replay within the grace window; past it
    (or for a token rotated without one) the reuse ends the family."""
    late = used.rotated_at is None or now - used.rotated_at > REUSE_GRACE_SECONDS
    if late or used.successor is None:
        await _revoke_for_reuse(repos, used)
    secret = KeyRing(presented).decrypt(used.successor, used.token_hash.encode()).decode()
    if not await session_is_live(repos, used.family_id):
        raise InvalidRefreshToken("This session has ended; sign in again.")
    return secret


async def _revoke_for_reuse(repos: Repositories, token: RefreshToken) -> NoReturn:
    # A used refresh token came back: it was copied. End every token of the family.
    log.warning("refresh token reused; session %s revoked", token.family_id)
    await repos.auth.revoke_session(token.family_id)
    raise RefreshTokenReused("This sign-in was used twice and has been ended; sign in again.")


async def end_session(repos: Repositories, presented: str | None) -> None:
    """Logout: the session of the presented refresh token is revoked. Unknown: nothing."""
    if not presented or not presented.startswith(REFRESH_PREFIX):
        return
    token = await repos.auth.get_refresh_token(digest(presented))
    if token is not None:
        with contextlib.suppress(ConditionFailed):  # the session has expired already
            await repos.auth.revoke_session(token.family_id)


async def session_is_live(repos: Repositories, family_id: str) -> bool:
    session = await repos.auth.get_session(family_id)
    return session is not None and not session.revoked


async def remember_nonce(repos: Repositories, nonce: str, clock: Clock) -> None:
    ttl = int(clock.now() + NONCE_MEMORY.total_seconds())
    try:
        await repos.auth.record_nonce(OAuthNonce(nonce_hash=digest(nonce), ttl=ttl))
    except ConditionFailed as e:
        raise NonceReplayed("This sign-in response was already used.") from e


# --- API keys ------------------------------------------------------------------------------


async def create_api_key(
    repos: Repositories, email: str, name: str, clock: Clock
) -> tuple[ApiKeyRef, str]:
    """The key's listing entry and its secret, which is shown this once and never again."""
    secret = new_secret(API_KEY_PREFIX)
    key_hash = digest(secret)
    ref = ApiKeyRef(
        email=email,
        key_id=new_id(),
        key_hash=key_hash,
        name=name,
        prefix=secret[:SHOWN_PREFIX],
        created_at=_at(clock),
    )
    await repos.auth.create_api_key(ApiKey(key_hash=key_hash, key_id=ref.key_id, email=email), ref)
    return ref, secret


async def list_api_keys(repos: Repositories, email: str) -> list[tuple[ApiKeyRef, datetime | None]]:
    pairs = await repos.auth.list_api_keys(email)
    return [(ref, key.last_used_at if key else None) for ref, key in pairs]


async def revoke_api_key(repos: Repositories, email: str, key_id: str) -> None:
    ref = await repos.auth.get_api_key_ref(email, key_id)
    if ref is None:
        raise ApiKeyNotFound("No API key with that id.")
    await repos.auth.delete_api_key(ref)


async def email_for_api_key(repos: Repositories, secret: str, clock: Clock) -> str:
    key = await repos.auth.get_api_key(digest(secret))
    if key is None:
        raise InvalidApiKey("The API key is not valid; it may have been revoked.")
    now = _at(clock)
    if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
        try:
            await repos.auth.touch_api_key(key.model_copy(update={"last_used_at": now}))
        except ConditionFailed as e:  # revoked while this request was in flight
            raise InvalidApiKey("The API key is not valid; it may have been revoked.") from e
    return key.email
