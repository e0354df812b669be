"""Search over HTTP: archival search's limit, mode and scores; message search under the
owned agent, with its filters; and the errors a client can make."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.runtime.conftest import new_agent, running


@pytest.fixture
def client(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    settings = Settings(sqlite_path=tmp_path / "api.db", encryption_key="k" * 40)
    with running(settings, clock) as client:
        yield client


def remember(client: TestClient, agent: str, *texts: str) -> None:
    for text in texts:
        stored = client.post(f"/agents/{agent}/memory/archival", json={"content": text})
        assert stored.status_code == 201, stored.text


def test_archival_search_takes_limit_and_mode_and_gives_scores(client: TestClient) -> None:
    agent = new_agent(client)
    remember(client, agent, *(f"Coffee note {i}" for i in range(8)), "I love pizza")
    url = f"/agents/{agent}/memory/archival/search"
    page = client.get(url, params={"query": "coffee", "limit": 3, "mode": "lexical"}).json()
    assert (page["total"], page["pages"], page["mode"]) == (8, 3, "lexical")
    assert len(page["memories"]) == 3
    assert all(m["score"] > 0 and m["similarity"] is None for m in page["memories"])

    hybrid = client.get(url, params={"query": "what food do I like?"}).json()
    assert hybrid["mode"] == "hybrid"  # the default with an embedding backend
    best = hybrid["memories"][0]
    assert best["content"] == "I love pizza"
    assert 0 < best["similarity"] <= 1


@pytest.mark.parametrize(
    "params",
    [
        {"query": "x", "mode": "fuzzy"},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 101},
        {"query": ""},
        {"query": "x" * 2001},
        {"query": "x", "page": 0},
    ],
)
def test_archival_search_refuses_bad_parameters(
    client: TestClient, params: dict[str, str | int]
) -> None:
    agent = new_agent(client)
    refused = client.get(f"/agents/{agent}/memory/archival/search", params=params)
    assert refused.status_code == 422
    assert refused.json()["code"] == "validation_error"


def test_semantic_search_without_an_embedder_is_a_clear_400(
    tmp_path: Path, clock: FrozenClock
) -> None:
    settings = Settings(
        sqlite_path=tmp_path / "none.db", encryption_key="k" * 40, memory_embedding_backend="none"
    )
    with running(settings, clock) as client:
        agent = new_agent(client)
        remember(client, agent, "I love pizza")
        url = f"/agents/{agent}/memory/archival/search"
        refused = client.get(url, params={"query": "food", "mode": "semantic"})
        assert refused.status_code == 400
        assert refused.json()["code"] == "semantic_search_unavailable"
        assert "MEMORY_EMBEDDING_BACKEND=none" in refused.json()["message"]
        found = client.get(url, params={"query": "pizza"}).json()
        assert found["mode"] == "lexical"
        assert [m["content"] for m in found["memories"]] == ["I love pizza"]


def chat(client: TestClient, agent: str, prompt: str, **fields: str) -> None:
    said = client.post(
        "/chat", json={"agent_id": agent, "prompt": prompt, "stream": False, **fields}
    )
    assert said.status_code == 200, said.text


def test_message_search_across_conversations_and_within_a_session(client: TestClient) -> None:
    agent = new_agent(client)
    chat(client, agent, "My favourite city is Lisbon", session_id="trip")
    chat(client, agent, "I might move to Lisbon next year", session_id="plans", actor_id="bob")
    url = f"/agents/{agent}/messages/search"

    every = client.get(url, params={"q": "Lisbon", "role": "user"}).json()
    assert every["mode"] == "hybrid"
    assert {m["content"] for m in every["messages"]} == {
        "My favourite city is Lisbon",
        "I might move to Lisbon next year",
    }
    assert all(m["score"] > 0 and m["role"] == "user" for m in every["messages"])

    trip = client.get(url, params={"q": "Lisbon", "session_id": "trip", "role": "user"}).json()
    assert [m["content"] for m in trip["messages"]] == ["My favourite city is Lisbon"]
    bob = client.get(url, params={"q": "Lisbon", "actor_id": "bob", "mode": "lexical"}).json()
    # Bob's question, then the answer to it (found through the question before it).
    assert [m["content"] for m in bob["messages"]][:1] == ["I might move to Lisbon next year"]
    assert {m["actor_id"] for m in bob["messages"]} == {"bob"}
    nowhere = client.get(url, params={"q": "Lisbon", "session_id": "no-such-session"}).json()
    assert (nowhere["total"], nowhere["messages"]) == (0, [])
    conversation = trip["messages"][0]["conversation_id"]
    one = client.get(url, params={"q": "Lisbon", "conversation_id": conversation}).json()
    assert {m["conversation_id"] for m in one["messages"]} == {conversation}
    later = client.get(url, params={"q": "Lisbon", "after": "2999-01-01T00:00:00Z"}).json()
    assert later["total"] == 0
    # A time without a zone is UTC, and may be given with one that has a zone.
    mixed = {
        "q": "Lisbon",
        "role": "user",
        "after": "2000-01-01T00:00:00",
        "before": "2999-01-01T00:00:00Z",
    }
    assert client.get(url, params=mixed).json()["total"] == every["total"]
    naive_later = client.get(url, params={"q": "Lisbon", "after": "2999-01-01T00:00:00"})
    assert naive_later.json()["total"] == 0


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        (
            {"q": "x", "after": "2025-02-01T00:00:00Z", "before": "2025-01-01T00:00:00Z"},
            400,
            "invalid_time_range",
        ),
        ({"q": "x", "role": "tool"}, 422, "validation_error"),
        ({"q": ""}, 422, "validation_error"),
        ({"q": "x", "limit": 500}, 422, "validation_error"),
        ({"q": "x", "after": "yesterday-ish"}, 422, "validation_error"),
        ({"q": "x", "session_id": "bad\u0007id"}, 422, "validation_error"),
    ],
)
def test_message_search_refuses_bad_parameters(
    client: TestClient, params: dict[str, str | int], status: int, code: str
) -> None:
    agent = new_agent(client)
    refused = client.get(f"/agents/{agent}/messages/search", params=params)
    assert refused.status_code == status, refused.text
    assert refused.json()["code"] == code


def test_message_search_of_an_unknown_agent_is_404(client: TestClient) -> None:
    missing = client.get("/agents/no-such-agent/messages/search", params={"q": "x"})
    assert missing.status_code == 404
