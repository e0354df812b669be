"""Seed 002's routes with another embedding backend: one that fails (502, nothing stored)
and none at all (lexical search, `similarity` null)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.kit.clock import FrozenClock
from tests.fakes.embedding_servers import FakeEmbeddingServer, start_fake_ollama
from tests.memory_server.conftest import local_settings, new_agent, post_message, refused
from tests.runtime.conftest import running


@pytest.fixture
def ollama() -> Iterator[FakeEmbeddingServer]:
    with start_fake_ollama() as server:
        yield server


def test_a_failing_backend_is_a_502_and_stores_nothing(
    tmp_path: Path, clock: FrozenClock, ollama: FakeEmbeddingServer
) -> None:
    settings = local_settings(
        tmp_path, memory_embedding_backend="ollama", ollama_base_url=ollama.base_url
    )
    with running(settings, clock) as client:
        new_agent(client)
        post_message(client, clock, "Kept before the failure")
        assert client.get("/health").json()["embedding_backend"] == "ollama"
        ollama.fail_status = 500
        body = {"agent_name": "my_agent", "role": "user", "content": "Not kept"}
        refused(client.post("/messages", json=body), 502, "embedding_failed")
        search = {"agent_name": "my_agent", "query": "kept"}
        refused(client.post("/messages/search", json=search), 502, "embedding_failed")
        refused(client.post("/context/my_agent", json={"query": "kept"}), 502, "embedding_failed")
        ollama.fail_status = None
        listed = client.get("/messages/my_agent").json()
        assert [m["content"] for m in listed] == ["Kept before the failure"]


def test_without_a_backend_search_is_lexical(tmp_path: Path, clock: FrozenClock) -> None:
    settings = local_settings(tmp_path, memory_embedding_backend="none")
    with running(settings, clock) as client:
        new_agent(client)
        post_message(client, clock, "I love pizza")
        # Another session: within one, a message also scores some of the one before it.
        post_message(client, clock, "The meeting is on Thursday", session_id="work")
        found = client.post("/messages/search", json={"agent_name": "my_agent", "query": "pizza"})
        assert [(m["content"], m["similarity"]) for m in found.json()] == [("I love pizza", None)]
        context = client.post("/context/my_agent", json={"query": "pizza"}).json()
        assert [m["content"] for m in context["relevant_messages"]] == ["I love pizza"]
