"""Two app instances on one table, as two replicas behind a load balancer: what one writes,
the other finds at once; what one deletes, the other never returns."""

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.fakes.embedding_servers import start_fake_ollama
from tests.runtime.conftest import Store, new_agent, running, settings

__all__ = ["settings"]


@pytest.fixture(params=["sqlite", "dynamodb_local"])
def shared(request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock) -> Store:
    endpoint = None
    if request.param == "dynamodb_local":
        endpoint = request.getfixturevalue("dynamodb_local").endpoint
    name = f"replicas-{uuid.uuid4().hex[:12]}"
    return Store(request.param, tmp_path / "replicas.db", name, endpoint, clock)


@pytest.fixture
def replicas(
    shared: Store, settings: Settings, clock: FrozenClock
) -> Iterator[tuple[TestClient, TestClient]]:
    with (
        running(settings, clock, shared.open()) as a,
        running(settings, clock, shared.open()) as b,
    ):
        yield a, b


def search(client: TestClient, agent_id: str, query: str, mode: str = "hybrid") -> list[str]:
    found = client.get(
        f"/agents/{agent_id}/memory/archival/search",
        params={"query": query, "mode": mode, "limit": 20},
    )
    assert found.status_code == 200, found.text
    return [m["content"] for m in found.json()["memories"]]


def test_an_insert_through_a_is_found_through_b(
    replicas: tuple[TestClient, TestClient],
) -> None:
    a, b = replicas
    agent = new_agent(a)
    assert search(b, agent, "pizza") == []  # B has loaded the agent's (empty) index
    for i, text in enumerate(["I love pizza", "My bike is red", "Pizza on Fridays"]):
        inserted = a.post(f"/agents/{agent}/memory/archival", json={"content": text})
        assert inserted.status_code == 201, inserted.text
        # Immediately after each insert returned, with no wait.
        assert text in search(b, agent, text, mode="lexical"), i
    assert "I love pizza" in search(b, agent, "what food do I like?", mode="semantic")


def test_a_delete_through_a_is_never_returned_by_b(
    replicas: tuple[TestClient, TestClient],
) -> None:
    a, b = replicas
    agent = new_agent(a)
    ids = []
    for text in ["Locker code 4512", "Locker is on the second floor"]:
        ids.append(a.post(f"/agents/{agent}/memory/archival", json={"content": text}).json()["id"])
    assert len(search(b, agent, "locker")) == 2
    assert a.delete(f"/agents/{agent}/memory/archival/{ids[0]}").status_code == 204
    for mode in ("hybrid", "lexical", "semantic"):
        assert "Locker code 4512" not in search(b, agent, "locker code", mode=mode)
    # And B's own delete reaches A.
    assert b.delete(f"/agents/{agent}/memory/archival/{ids[1]}").status_code == 204
    assert search(a, agent, "locker", mode="lexical") == []


def test_messages_of_a_deleted_conversation_are_never_returned(
    replicas: tuple[TestClient, TestClient],
) -> None:
    a, b = replicas
    agent = new_agent(a)
    said = a.post(
        "/chat", json={"agent_id": agent, "prompt": "I prefer green tea", "stream": False}
    )
    assert said.status_code == 200, said.text
    url = f"/agents/{agent}/messages/search"
    found = b.get(url, params={"q": "green tea", "mode": "lexical"}).json()
    assert [m["content"] for m in found["messages"] if m["role"] == "user"] == [
        "I prefer green tea"
    ]
    conversation = found["messages"][0]["conversation_id"]
    assert a.delete(f"/conversations/{conversation}").status_code == 204
    assert b.get(url, params={"q": "green tea"}).json()["total"] == 0


def test_two_embedding_models_are_never_mixed(
    shared: Store, settings: Settings, clock: FrozenClock
) -> None:
    """A replica on another model treats the first one's vectors as absent: found by its
    words, never compared with a vector of another space (and the same the other way)."""
    with start_fake_ollama() as ollama:
        other = settings.model_copy(
            update={"memory_embedding_backend": "ollama", "ollama_base_url": ollama.base_url}
        )
        with (
            running(settings, clock, shared.open()) as a,
            running(other, clock, shared.open()) as b,
        ):
            agent = new_agent(a)
            a.post(f"/agents/{agent}/memory/archival", json={"content": "I love pizza"})
            assert search(b, agent, "I love pizza", mode="semantic") == []
            assert search(b, agent, "pizza", mode="lexical") == ["I love pizza"]

            b.post(f"/agents/{agent}/memory/archival", json={"content": "Pizza night on Fridays"})
            exact = b.get(
                f"/agents/{agent}/memory/archival/search",
                params={"query": "Pizza night on Fridays", "mode": "semantic"},
            ).json()["memories"]
            assert [m["content"] for m in exact] == ["Pizza night on Fridays"]
            assert exact[0]["similarity"] == pytest.approx(1.0, abs=1e-3)
            assert "Pizza night on Fridays" not in search(a, agent, "pizza night", "semantic")
            assert "I love pizza" in search(a, agent, "what food do I like?", "semantic")
