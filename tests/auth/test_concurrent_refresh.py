"""Two refreshes of one token at the same moment, on a real SQLite table: both read it
unrotated, both try to rotate it, and the loser of the transaction takes the winner's
successor (never a second branch); a session revoked meanwhile refuses the refresh."""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from api.auth import service
from api.auth.tokens import issuer_for
from api.kit.clock import FrozenClock
from api.kit.secrets import digest
from api.repositories import Repositories
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Table, TransactionCancelled
from api.store.wrapper import TableWrapper, Target

ISSUER = issuer_for("s" * 64, 15)
T = TypeVar("T")


class Cancellations(TableWrapper):
    """The table, noting each transaction it cancelled (to show which branch ran)."""

    def __init__(self, table: Table) -> None:
        super().__init__(table)
        self.cancelled: list[TransactionCancelled] = []

    async def around(self, operation: str, target: Target, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await call()
        except TransactionCancelled as e:
            self.cancelled.append(e)
            raise


@pytest.fixture
async def table(tmp_path: Path, clock: FrozenClock) -> AsyncIterator[Cancellations]:
    sqlite = SqliteTable(tmp_path / "refresh.db", "refresh", load_definition(), clock=clock)
    await sqlite.create()
    table = Cancellations(sqlite)
    yield table
    await table.close()


async def test_the_loser_of_a_concurrent_rotation_gets_the_same_successor(
    table: Cancellations, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    started = await service.start_session(repos, "a@example.com", ISSUER, 30, clock)
    first, second = await asyncio.gather(
        service.refresh(repos, started.refresh_token, ISSUER, clock),
        service.refresh(repos, started.refresh_token, ISSUER, clock),
    )
    [lost] = table.cancelled  # both rotated the unrotated token; one transaction lost
    assert lost.reasons[0] is not None
    assert first.refresh_token == second.refresh_token != started.refresh_token
    successor = await repos.auth.get_refresh_token(digest(first.refresh_token))
    assert successor is not None
    assert not successor.rotated
    # The one successor goes on rotating; the session is alive.
    third = await service.refresh(repos, first.refresh_token, ISSUER, clock)
    assert third.refresh_token not in (first.refresh_token, started.refresh_token)


async def test_a_session_revoked_during_the_rotation_refuses_the_refresh(
    table: Cancellations, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    started = await service.start_session(repos, "a@example.com", ISSUER, 30, clock)
    token = await repos.auth.get_refresh_token(digest(started.refresh_token))
    assert token is not None
    refreshed, revoked = await asyncio.gather(
        service.refresh(repos, started.refresh_token, ISSUER, clock),
        repos.auth.revoke_session(token.family_id),
        return_exceptions=True,
    )
    assert revoked is None
    assert isinstance(refreshed, service.InvalidRefreshToken)
    assert refreshed.message == "This session has ended; sign in again."
    [lost] = table.cancelled
    assert lost.reasons[0] is None  # the token was still unrotated: the session check failed
    kept = await repos.auth.get_refresh_token(token.token_hash)
    assert kept is not None
    assert not kept.rotated
