"""One turn at a time in a conversation across replicas: two runtimes, each with its own
handle on one SQLite file or one DynamoDB Local table, as two server processes have."""

import pytest

from api.agents import service as agents
from api.agents.schemas import AgentCreate
from api.config import Settings
from api.conversations import service as conversations
from api.kit.clock import FrozenClock
from api.runtime import lease
from api.runtime.lease import ConversationBusy
from api.runtime.runner import Runtime
from api.search.engine import SearchEngine
from api.settings import keys
from api.store.table import Table
from tests.runtime.conftest import Store

EMAIL = "ada@example.com"


def runtime_on(table: Table, settings: Settings, clock: FrozenClock) -> Runtime:
    return Runtime(
        table, clock, keys.keyring(settings), settings, search=SearchEngine(table, None, clock)
    )


async def test_a_second_replica_is_refused_while_the_first_turn_runs(
    store: Store, settings: Settings, clock: FrozenClock
) -> None:
    a_table, b_table = store.open(), store.open()
    await a_table.create()
    a, b = runtime_on(a_table, settings, clock), runtime_on(b_table, settings, clock)
    agent, _ = await agents.create(a_table, EMAIL, AgentCreate(name="Leased"), clock)
    conversation = await conversations.create(a_table, agent, "", clock)
    request = conversations.turn_request(conversation, "hello", None)

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
    await a_table.create()
    a, b = runtime_on(a_table, settings, clock), runtime_on(b_table, settings, clock)
    agent, _ = await agents.create(a_table, EMAIL, AgentCreate(name="Patient"), clock)
    conversation = await conversations.create(a_table, agent, "", clock)
    request = conversations.turn_request(conversation, "hello", None)

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
