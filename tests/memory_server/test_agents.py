"""POST /agents and GET /agents/{name} as seed 002 documents them, beside our own fields."""

from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.agents import service as agents
from api.agents.schemas import AgentCreate
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.runtime.architectures.registry import ARCHITECTURES
from api.store.table import Table
from tests.memory_server.conftest import new_agent, refused

FREE_JSON: dict[str, Any] = {
    "team": {"name": "core", "size": 3, "tags": ["a", "b"]},
    "score": 0.75,
    "big": 12345678901234567890,
    "active": True,
    "nothing": None,
    "list": [1, 2.5, "x", None, False, {"deep": [[]]}],
}


def test_seed_body_creates_an_agent_with_the_seed_fields(api: TestClient) -> None:
    created = api.post("/agents", json={"name": "my_agent", "metadata": {}})
    assert created.status_code == 201, created.text
    agent = created.json()
    assert agent["name"] == "my_agent"
    assert agent["metadata"] == {}
    assert agent["id"]
    assert agent["created_at"].startswith("20")
    # Ours too, with their defaults.
    assert (agent["architecture"], agent["provider"]) == ("krishna-memgpt", "offline")

    again = api.post("/agents", json={"name": "my_agent"})
    assert again.status_code == 200  # the existing one, as the seed says
    assert again.json()["id"] == agent["id"]


def test_metadata_is_free_json_kept_as_sent(api: TestClient) -> None:
    agent = new_agent(api, metadata=FREE_JSON)
    assert agent["metadata"] == FREE_JSON
    assert api.get(f"/agents/{agent['id']}").json()["metadata"] == FREE_JSON
    assert api.get("/agents/my_agent").json()["metadata"] == FREE_JSON
    # Null or absent: an empty object.
    assert new_agent(api, "other", metadata=None)["metadata"] == {}
    assert new_agent(api, "third")["metadata"] == {}
    # Our clients' string metadata still works, and PATCH replaces it.
    changed = api.patch(f"/agents/{agent['id']}", json={"metadata": {"team": "a"}})
    assert changed.json()["metadata"] == {"team": "a"}


def test_an_agent_is_found_by_name_or_by_id(api: TestClient) -> None:
    agent = new_agent(api, "My Agent")
    for ref in ("My Agent", "my agent", "MY  AGENT", agent["id"]):
        found = api.get(f"/agents/{ref}")
        assert found.status_code == 200, ref
        assert found.json()["id"] == agent["id"]
    refused(api.get("/agents/nobody"), 404, "agent_not_found")
    refused(api.get("/agents/%20"), 404, "agent_not_found")


def test_an_id_wins_over_a_name(api: TestClient) -> None:
    first = new_agent(api, "first")
    # An agent named like another's id: the id finds the agent it belongs to.
    named_like_an_id = new_agent(api, first["id"])
    assert api.get(f"/agents/{first['id']}").json()["id"] == first["id"]
    assert api.get(f"/agents/{named_like_an_id['id']}").json()["name"] == first["id"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": 123},
        {"name": "x", "metadata": []},
        {"name": "x", "metadata": "tags"},
        {"name": "x", "metadata": {"": 1}},
        {"name": "x", "metadata": {"a": {"": 1}}},
        {"name": "x", "metadata": {"a": 1e300}},
        {"name": "x", "metadata": {"a": 10**40}},
        {"name": "x", "metadata": {"a": "x" * 40_000}},
        {"name": "x", "metadata": {"a": [[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}},
        {"name": "x", "nickname": "y"},
    ],
)
def test_bad_agent_bodies_are_422(api: TestClient, body: dict[str, Any]) -> None:
    refused(api.post("/agents", json=body), 422, "validation_error")
    assert api.get("/agents").json() == []


def test_numbers_that_are_not_numbers_are_422(api: TestClient) -> None:
    for raw in (
        b'{"name": "x", "metadata": {"a": NaN}}',
        b'{"name": "x", "metadata": {"a": "\\ud800"}}',
    ):
        response = api.post("/agents", content=raw, headers={"content-type": "application/json"})
        refused(response, 422, "validation_error")


async def test_metadata_round_trips_on_every_engine(table: Table, clock: FrozenClock) -> None:
    """Numbers come back from the store as Decimals: read as the JSON that was sent."""
    repos = Repositories.over(table)
    body = AgentCreate(name="Meta", metadata=FREE_JSON)
    agent, _ = await agents.create(
        repos, "ada@example.com", body, clock, architectures=ARCHITECTURES
    )
    stored = await agents.get_by_name(repos, "ada@example.com", "meta")
    assert stored.metadata == FREE_JSON
    assert stored.agent_id == agent.agent_id
