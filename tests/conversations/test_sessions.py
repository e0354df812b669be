"""Client-chosen session ids, resolved inside their tenant to server-made conversations."""

import asyncio
from datetime import UTC, datetime

from api.agents.models import Agent
from api.conversations import service
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.store.table import Table
from tests.contract.conftest import skip_on_moto


def agent_of(email: str, agent_id: str = "a-1") -> Agent:
    now = datetime.now(tz=UTC)
    return Agent(
        agent_id=agent_id, created_by=email, agent_name="Helper", created_at=now, updated_at=now
    )


async def test_concurrent_first_turns_open_one_conversation(
    table: Table, engine: str, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    skip_on_moto(engine, "moto's transactions are not safe across threads")
    agent = agent_of("ann@example.com")

    opened = await asyncio.gather(
        *(service.open_session(repos, agent, "s-1", clock, found=None) for _ in range(8))
    )

    assert len(set(opened)) == 1
    listed, _ = await repos.conversations.list_for_agent(agent.agent_id, limit=10, cursor=None)
    assert [c.conversation_id for c in listed] == opened[:1]
    assert listed[0].session_id == "s-1"
    found = await repos.conversations.session("ann@example.com", agent.agent_id, "s-1")
    assert found is not None
    assert await service.open_session(repos, agent, "s-1", clock, found=found) == opened[0]


async def test_a_session_id_is_scoped_to_its_tenant_and_agent(
    table: Table, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    ann = await service.open_session(repos, agent_of("ann@example.com"), "s", clock, found=None)
    bob = await service.open_session(repos, agent_of("bob@example.com"), "s", clock, found=None)
    other = await service.open_session(
        repos, agent_of("ann@example.com", "a-2"), "s", clock, found=None
    )
    assert len({ann, bob, other}) == 3
    assert await repos.conversations.session("bob@example.com", "a-1", "s") is not None
    assert await repos.conversations.session("eve@example.com", "a-1", "s") is None
