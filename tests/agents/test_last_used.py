"""The agents list, the last used first (an agent never used counts from its creation), then
by name; a turn's end is an agent's last use, and no save of the agent puts back an older
one. Over HTTP on a SQLite file and on DynamoDB Local; the save's race on every engine."""

from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest

from api.agents import service
from api.agents.models import Agent, AgentNameGuard
from api.agents.repository import AgentRepository
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.store.table import Table
from tests.runtime.conftest import Store, new_agent, new_conversation, running, send, store
from tests.runtime.conftest import settings as settings

__all__ = ["settings", "store"]


def names(client: httpx2.Client) -> list[str]:
    got = client.get("/agents")
    assert got.status_code == 200, got.text
    return [a["name"] for a in got.json()]


def at(clock: FrozenClock) -> str:
    return datetime.fromtimestamp(clock.now(), UTC).isoformat().replace("+00:00", "Z")


@pytest.mark.dynamodb_local
def test_agents_are_listed_by_last_use_then_name(
    settings: Any, store: Store, clock: FrozenClock
) -> None:
    with running(settings, clock, store.open()) as client:
        ids = {}
        for name in ("Bea", "ann", "Cid"):
            ids[name] = new_agent(client, name)
            clock.advance(1)
        # Made together: by name, as names compare (case aside).
        ids["zed"] = new_agent(client, "zed")
        ids["Abe"] = new_agent(client, "Abe")
        assert names(client) == ["Abe", "zed", "Cid", "ann", "Bea"]
        assert client.get(f"/agents/{ids['Bea']}").json()["last_used_at"] is None

        clock.advance(10)
        used = at(clock)
        send(client, new_conversation(client, ids["Bea"]), "Hello")
        assert names(client) == ["Bea", "Abe", "zed", "Cid", "ann"]
        bea = client.get(f"/agents/{ids['Bea']}").json()
        assert bea["last_used_at"] == used
        assert bea["updated_at"] == bea["created_at"]  # a turn is no change to the agent

        # An edit keeps the last use (a save writes every attribute but that one).
        clock.advance(10)
        edited = client.patch(f"/agents/{ids['Bea']}", json={"persona": "Terse."})
        assert edited.status_code == 200, edited.text
        assert edited.json()["last_used_at"] == used
        assert names(client) == ["Bea", "Abe", "zed", "Cid", "ann"]

        # /chat's turns count as any other.
        clock.advance(10)
        chat = client.post("/chat", json={"agent_id": ids["ann"], "prompt": "Hi", "stream": False})
        assert chat.status_code == 200, chat.text
        assert names(client)[:2] == ["ann", "Bea"]


async def test_a_save_made_while_a_turn_ends_keeps_the_turns_last_use(
    table: Table, clock: FrozenClock
) -> None:
    agents = AgentRepository(table)
    made = datetime.fromtimestamp(clock.now(), UTC)
    agent = Agent(
        agent_id="a1",
        created_by="u@example.com",
        agent_name="Ada",
        created_at=made,
        updated_at=made,
    )
    guard = AgentNameGuard(created_by="u@example.com", normalized_name="ada", agent_id="a1")
    await agents.create(agent, guard)
    read = await agents.get("u@example.com", "a1")
    assert read is not None
    # A turn ends between the edit's read and its save.
    ended = datetime(2026, 1, 2, tzinfo=UTC)
    assert await agents.mark_used("u@example.com", "a1", ended)
    await agents.save(read.model_copy(update={"agent_persona": "Terse.", "version": 1}))
    saved = await agents.get("u@example.com", "a1")
    assert saved is not None
    assert saved.agent_persona == "Terse."
    assert saved.last_used_at == ended
    assert saved.version == 1

    # A use is noted for an agent that exists, never for one deleted.
    await agents.delete(saved, guard)
    assert not await agents.mark_used("u@example.com", "a1", ended)
    assert await agents.get("u@example.com", "a1") is None
    assert await service.list_for(Repositories.over(table), "u@example.com") == []
