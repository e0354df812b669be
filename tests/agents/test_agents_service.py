"""Agent creation is idempotent by name, on every engine, even under concurrency."""

import asyncio

from api.agents import service
from api.agents.schemas import AgentCreate, AgentUpdate
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.runtime.architectures.registry import ARCHITECTURES
from api.search.engine import SearchEngine
from api.store.table import Table
from tests.contract.conftest import skip_on_moto


async def test_ten_parallel_creates_make_one_agent(
    table: Table, clock: FrozenClock, engine: str
) -> None:
    repos = Repositories.over(table)
    skip_on_moto(engine, "its in-process tables are not thread-safe")
    body = AgentCreate(name="Helper")
    results = await asyncio.gather(
        *(
            service.create(repos, "ada@example.com", body, clock, architectures=ARCHITECTURES)
            for _ in range(10)
        )
    )
    assert len({agent.agent_id for agent, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert len(await service.list_for(repos, "ada@example.com")) == 1


async def test_names_differing_in_case_or_spacing_are_one_agent(
    table: Table, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    first, created = await service.create(
        repos, "a@x.io", AgentCreate(name="My  Helper"), clock, architectures=ARCHITECTURES
    )
    again, created_again = await service.create(
        repos, "a@x.io", AgentCreate(name="my helper "), clock, architectures=ARCHITECTURES
    )
    assert created
    assert not created_again
    assert again.agent_id == first.agent_id
    other, _ = await service.create(
        repos, "b@x.io", AgentCreate(name="My Helper"), clock, architectures=ARCHITECTURES
    )
    assert other.agent_id != first.agent_id  # names are unique per user, not globally


async def test_concurrent_edits_both_land(table: Table, clock: FrozenClock, engine: str) -> None:
    repos = Repositories.over(table)
    skip_on_moto(engine, "its in-process tables are not thread-safe")
    agent, _ = await service.create(
        repos, "a@x.io", AgentCreate(name="Alpha"), clock, architectures=ARCHITECTURES
    )
    await asyncio.gather(
        service.update(
            repos, agent, AgentUpdate(persona="Kind"), clock, architectures=ARCHITECTURES
        ),
        service.update(repos, agent, AgentUpdate(model="m2"), clock, architectures=ARCHITECTURES),
    )
    stored = await service.get(repos, "a@x.io", agent.agent_id)
    assert (stored.agent_persona, stored.agent_model) == ("Kind", "m2")


async def test_a_stale_edit_never_undoes_a_rename(table: Table, clock: FrozenClock) -> None:
    repos = Repositories.over(table)
    stale, _ = await service.create(
        repos, "a@x.io", AgentCreate(name="Alpha"), clock, architectures=ARCHITECTURES
    )
    await service.update(repos, stale, AgentUpdate(name="Beta"), clock, architectures=ARCHITECTURES)
    await service.update(
        repos, stale, AgentUpdate(persona="Calm"), clock, architectures=ARCHITECTURES
    )  # from the old copy
    stored = await service.get(repos, "a@x.io", stale.agent_id)
    assert (stored.agent_name, stored.agent_persona) == ("Beta", "Calm")
    again, created = await service.create(
        repos, "a@x.io", AgentCreate(name="beta"), clock, architectures=ARCHITECTURES
    )
    assert not created
    assert again.agent_id == stale.agent_id
    await service.delete(
        repos, SearchEngine(repos.search, None, clock), stale
    )  # from the old copy, still deletes the agent
    assert await service.list_for(repos, "a@x.io") == []
