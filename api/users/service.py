"""Users: the local user of the embedded mode, and users who sign in with Google."""

from datetime import UTC, datetime

from api.errors import AppError
from api.kit.clock import Clock
from api.repositories import Repositories
from api.store.table import ConditionFailed, TransactionCancelled
from api.users import repository
from api.users.models import User


class EmailNotVerified(AppError):
    status_code = 403
    code = "email_not_verified"


class AccountConflict(AppError):
    status_code = 409
    code = "account_conflict"


def _now(clock: Clock) -> datetime:
    return datetime.fromtimestamp(clock.now(), tz=UTC)


async def ensure_local_user(repos: Repositories, email: str, clock: Clock) -> User:
    """The one user of AUTH_MODE=local, created on first start."""
    now = _now(clock)
    user = User(email=email, name="Local user", created_at=now, updated_at=now)
    try:
        await repos.users.create_if_absent(user)
    except ConditionFailed:
        existing = await repos.users.get(email)
        assert existing is not None
        return existing
    return user


class LocalIdentity:
    """The local user, created on first use (not at start, so /health answers even while
    the store is down) and then remembered."""

    def __init__(self, email: str) -> None:
        self.email = email
        self._user: User | None = None

    async def user(self, repos: Repositories, clock: Clock) -> User:
        if self._user is None:
            self._user = await ensure_local_user(repos, self.email, clock)
        return self._user


async def sign_in_with_google(
    repos: Repositories,
    *,
    sub: str,
    email: str,
    email_verified: bool,
    name: str,
    picture: str | None,
    clock: Clock,
) -> User:
    """The user a Google account signs in as, created on first sign-in and kept current.

    Google's `sub` is the identity; the email only names the user. An email already used
    by another Google account is refused rather than handed over.
    """
    if not email_verified:
        raise EmailNotVerified("Google has not verified this account's email address.")
    now = _now(clock)
    known_email = await repos.users.email_for_google_subject(sub)
    if known_email is None:
        user = User(
            email=email, name=name, picture=picture, google_sub=sub, created_at=now, updated_at=now
        )
        try:
            await repos.users.create_with_google_subject(user, sub)
            return user
        except TransactionCancelled as e:
            if e.failed(repository.USER):
                raise AccountConflict(
                    "This email address already belongs to another account."
                ) from e
            known_email = await repos.users.email_for_google_subject(sub)
            if known_email is None:
                raise
    existing = await repos.users.get(known_email)
    if existing is None or existing.google_sub != sub:
        raise AccountConflict("This Google account is linked to a missing user.")
    if (existing.name, existing.picture) == (name, picture):
        return existing
    updated = existing.model_copy(update={"name": name, "picture": picture, "updated_at": now})
    await repos.users.save(updated)
    return updated
