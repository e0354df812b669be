"""One turn at a time in a conversation across replicas: two runtimes, each with its own
handle on one SQLite file or one DynamoDB Local table, as two server processes have."""

import asyncio
from pathlib import Path
from typing import Any

import pytest

from api.agents import service as agents
from api.agents.schemas import AgentCreate
from api.config import Settings
from api.conversations import service as conversations
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.runtime import lease
from api.runtime.architectures.registry import ARCHITECTURES
from api.runtime.lease import ConversationBusy
from api.runtime.request import TurnRequest
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Item, Key, Throttled
from tests.runtime.assembly import runtime_on
from tests.runtime.conftest import Store

EMAIL = "ada@example.com"


async def test_a_second_replica_is_refused_while_the_first_turn_runs(
    store: Store, settings: Settings, clock: FrozenClock
) -> None:
    a_table, b_table = store.open(), store.open()
    repos = Repositories.over(a_table)
    await a_table.create()
    a, b = runtime_on(a_table, clock, settings), runtime_on(b_table, clock, settings)
    agent, _ = await agents.create(
        repos, EMAIL, AgentCreate(name="Leased"), clock, architectures=ARCHITECTURES
    )
    conversation = await conversations.create(repos, agent, "", clock)
    request = TurnRequest.in_conversation(conversation, "hello", None)

    first = await a.prepare(request)
    with pytest.raises(ConversationBusy) as busy:
        await b.prepare(request)
    assert int(busy.value.headers()["Retry-After"]) <= lease.LEASE_SECONDS
    events = await first.collect()  # the whole turn, then the lease is freed
    assert events[-1].__class__.__name__ == "RunCompleted"
    second = await b.prepare(request)
    with pytest.raises(ConversationBusy):
        await a.prepare(request)
    clock.advance(lease.LEASE_SECONDS + 1)  # the second replica died holding it
    third = await a.prepare(request)
    await second.lease.free()  # lapsed and taken by the third: freeing it touches nothing
    with pytest.raises(ConversationBusy):
        await b.prepare(request)
    await third.lease.free()
    assert (await b.prepare(request)).lease.held
    for table in (a_table, b_table):
        await table.close()


async def test_a_turn_that_asks_to_wait_gets_its_turn(
    store: Store, settings: Settings, clock: FrozenClock
) -> None:
    import asyncio

    a_table, b_table = store.open(), store.open()
    repos = Repositories.over(a_table)
    await a_table.create()
    a, b = runtime_on(a_table, clock, settings), runtime_on(b_table, clock, settings)
    agent, _ = await agents.create(
        repos, EMAIL, AgentCreate(name="Patient"), clock, architectures=ARCHITECTURES
    )
    conversation = await conversations.create(repos, agent, "", clock)
    request = TurnRequest.in_conversation(conversation, "hello", None)

    first = await a.prepare(request)
    waiting = asyncio.ensure_future(b.prepare(request, wait=True))
    await asyncio.sleep(3 * lease.WAIT_STEP_SECONDS)
    assert not waiting.done()  # still waiting its turn
    await first.collect()  # the first turn ends and frees the conversation
    second = await asyncio.wait_for(waiting, timeout=10)
    assert second.lease.held
    # It read the conversation after its turn came: the first turn is in its context.
    assert any("user: hello" in section for section in second.turn.context)
    await second.lease.free()
    for table in (a_table, b_table):
        await table.close()


class ThrottledOnce(SqliteTable):
    """SQLite whose first renewal of a lease fails as a throttled DynamoDB would."""

    failed = 0

    async def update(self, key: Key, **changes: Any) -> Item:
        if key.sk == "Lease" and not self.failed:
            self.failed += 1
            raise Throttled("the test throttles the first renewal")
        return await super().update(key, **changes)


async def test_a_failed_renewal_is_tried_again_not_given_up(
    tmp_path: Path, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lease, "RENEW_EVERY_SECONDS", 0.01)
    table = ThrottledOnce(tmp_path / "lease.db", "leases", load_definition(), clock=clock)
    repos = Repositories.over(table)
    await table.create()
    held = lease.Lease(repos.conversations, clock, "c1", "run-1", renewals=lease.Renewals())
    await held.take()
    held.keep()
    await asyncio.sleep(0.05)  # the first renewal failed, later ones went through
    assert table.failed == 1
    for _ in range(2):  # 40 s on: held only if renewals went on after the failure
        clock.advance(20)
        await asyncio.sleep(0.05)
    assert await repos.conversations.lease_holder("c1") == "run-1"
    await held.free()
    await table.close()
