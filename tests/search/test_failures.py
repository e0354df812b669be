"""What the engine does when things go wrong or grow large: version races lost too often,
a change log too long to replay, large indexes searched off the event loop, deleted
documents piling up, damaged vectors, long conversations deleted, a backend that fails."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from api.config import Settings
from api.conversations import service as conversations
from api.conversations.messages import service as messages
from api.conversations.messages.models import Message
from api.conversations.models import Conversation
from api.embeddings.base import Embedder
from api.kit.clock import FrozenClock
from api.memory import archival
from api.repositories import Repositories
from api.search import engine as engine_module
from api.search import repository, vectors
from api.search.engine import SearchBusy, SearchEngine
from api.search.index import DEAD_SHARE, DELTA_MIN
from api.store import keys
from api.store.table import Table
from tests.app.test_cli import run_cli
from tests.fakes.embedding_servers import FakeEmbeddingServer, start_fake_ollama
from tests.runtime.conftest import new_agent, running
from tests.search.conftest import AGENT

OWNER = "ada@example.com"


async def test_losing_every_version_race_is_a_clear_503(
    repos: Repositories, engine: SearchEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def always_moved(*args: Any, **kwargs: Any) -> int:
        raise repository.VersionMoved

    monkeypatch.setattr(repository.SearchRepository, "commit", always_moved)
    monkeypatch.setattr(engine_module, "MAX_ATTEMPTS", 3)
    with pytest.raises(SearchBusy) as refused:
        await archival.insert(repos, engine, AGENT, "a memory that never lands")
    assert refused.value.status_code == 503


async def test_too_many_changes_to_replay_means_a_reload(
    repos: Repositories,
    engine: SearchEngine,
    store: Table,
    static: Embedder,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reader = SearchEngine(repos.search, static, clock)
    await archival.insert(repos, engine, AGENT, "first note about kites")
    await archival.search(reader, AGENT, "kites")
    loaded = reader._indexes[AGENT]
    monkeypatch.setattr(engine_module, "MAX_CATCH_UP", 2)
    for i in range(5):
        await archival.insert(repos, engine, AGENT, f"kite note {i}")
    found = await archival.search(reader, AGENT, "kite", mode="lexical", page_size=10)
    assert found.total == 6
    assert reader._indexes[AGENT] is not loaded  # loaded again, not caught up


async def test_large_indexes_are_searched_in_a_thread_with_the_same_results(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(20):
        await archival.insert(repos, engine, AGENT, f"Note {i} about the garden")
    inline = await archival.search(engine, AGENT, "garden", page_size=20)
    monkeypatch.setattr(engine_module, "INLINE_DOCS", 0)
    threaded = await archival.search(engine, AGENT, "garden", page_size=20)
    assert threaded.matches == inline.matches


async def test_a_large_catch_up_is_applied_off_the_loop_with_the_same_results(
    repos: Repositories,
    engine: SearchEngine,
    store: Table,
    static: Embedder,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reader = SearchEngine(repos.search, static, clock)
    await archival.insert(repos, engine, AGENT, "First note about the garden")
    await archival.search(reader, AGENT, "garden")  # loaded
    for i in range(5):
        await archival.insert(repos, engine, AGENT, f"Note {i} about the garden")
    loaded = reader._indexes[AGENT]
    applied_in: list[str] = []
    real_apply = reader._apply

    def spy(*args: Any) -> None:
        import threading

        applied_in.append(threading.current_thread().name)
        real_apply(*args)

    monkeypatch.setattr(reader, "_apply", spy)
    monkeypatch.setattr(engine_module, "INLINE_CHANGES", 0)
    found = await archival.search(reader, AGENT, "garden", mode="lexical", page_size=10)
    assert found.total == 6
    assert reader._indexes[AGENT] is loaded  # caught up, not loaded again
    assert applied_in
    assert applied_in[0] != "MainThread"


async def test_deleted_documents_piling_up_trigger_a_rebuild(
    repos: Repositories, engine: SearchEngine
) -> None:
    made = [
        await archival.insert(repos, engine, AGENT, f"Receipt {i} for the bike") for i in range(300)
    ]
    await archival.search(engine, AGENT, "bike")  # loaded: all in the main segment
    for inserted in made[:280]:
        await archival.delete_memory(repos, engine, AGENT, inserted.memory.memory_id)
    found = await archival.search(engine, AGENT, "bike receipt", mode="lexical", page_size=50)
    assert found.total == 20
    index = engine._indexes[AGENT]
    # Rebuilt without the dead once they passed the limit (as each delete was applied).
    assert len(index._main.docs) < 300
    assert index._main.dead <= max(DELTA_MIN, DEAD_SHARE * 300)
    assert len(index._main.docs) - index._main.dead == 20


def test_damaged_or_foreign_vectors_are_not_used() -> None:
    vector: vectors.Vector = np.asarray([0.5, 0.5, 0.5, 0.5], dtype=np.float32)
    good = vectors.attributes(vector, "static:m")
    read = vectors.of_item(good, "static:m")
    assert read is not None
    assert np.allclose(read, vector)
    assert vectors.of_item(good, "ollama:other") is None
    cut = good[vectors.EMBEDDING][:-1]
    for damaged in (
        {**good, vectors.EMBEDDING: cut},
        {**good, vectors.EMBEDDING_DIM: 5},
        {**good, vectors.EMBEDDING: "not bytes"},
        {},
    ):
        assert vectors.of_item(damaged, "static:m") is None


async def test_a_long_conversation_deleted_leaves_no_message_to_find(
    repos: Repositories, engine: SearchEngine, store: Table
) -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    conversation = Conversation(
        conversation_id="long",
        created_by=OWNER,
        agent_id=AGENT,
        created_at=start,
        updated_at=start,
    )
    await store.put(conversation.to_dynamo_item())
    for i in range(repository.MAX_CHANGE_KEYS + 20):  # more than one transaction's worth
        message = Message(
            conversation_id="long",
            message_id=f"m{i}",
            role="user",
            content=f"Shopping list item {i}",
            created_at=start + timedelta(seconds=i),
        )
        await messages.record(repos, engine, OWNER, AGENT, message)
    assert (
        await messages.search(repos, engine, OWNER, AGENT, "shopping", mode="lexical")
    ).total == 110
    await conversations.delete(repos, engine, conversation)
    assert (await messages.search(repos, engine, OWNER, AGENT, "shopping")).total == 0
    pk, sk = keys.message_recalls_of(AGENT)
    assert (await store.query(pk, sk=sk)).items == []


async def test_deleting_a_memory_whose_guard_names_another_leaves_the_guard(
    repos: Repositories, engine: SearchEngine, store: Table
) -> None:
    made = await archival.insert(repos, engine, AGENT, "The shed key is under the mat")
    guard_key = keys.archival_hash_guard(AGENT, made.memory.content_hash)
    await store.update(guard_key, set={"memory_id": "someone-else"})
    await archival.delete_memory(repos, engine, AGENT, made.memory.memory_id)
    assert await repos.memory.get_archival(AGENT, made.memory.memory_id) is None
    assert await store.get(guard_key) is not None
    assert (await archival.search(engine, AGENT, "shed key", mode="lexical")).total == 0


@pytest.fixture
def ollama() -> Iterator[FakeEmbeddingServer]:
    with start_fake_ollama() as server:
        yield server


def test_an_embedding_backend_failing_is_a_502_and_loses_nothing(
    tmp_path: Path, clock: FrozenClock, ollama: FakeEmbeddingServer
) -> None:
    settings = Settings(
        sqlite_path=tmp_path / "fail.db",
        encryption_key="k" * 40,
        memory_embedding_backend="ollama",
        ollama_base_url=ollama.base_url,
    )
    with running(settings, clock) as client:
        agent = new_agent(client)
        url = f"/agents/{agent}/memory/archival"
        assert client.post(url, json={"content": "Kept before the failure"}).status_code == 201
        ollama.fail_status = 500
        refused = client.post(url, json={"content": "Not kept"})
        assert refused.status_code == 502
        assert refused.json()["code"] == "embedding_failed"
        searched = client.get(url + "/search", params={"query": "kept"})
        assert searched.status_code == 502
        lexical = client.get(url + "/search", params={"query": "kept", "mode": "lexical"})
        assert [m["content"] for m in lexical.json()["memories"]] == ["Kept before the failure"]
        ollama.fail_status = None
        assert [m["content"] for m in client.get(url).json()["memories"]] == [
            "Kept before the failure"
        ]


def test_message_search_on_none_refuses_semantic_before_anything(
    tmp_path: Path, clock: FrozenClock
) -> None:
    settings = Settings(
        sqlite_path=tmp_path / "none.db", encryption_key="k" * 40, memory_embedding_backend="none"
    )
    with running(settings, clock) as client:
        agent = new_agent(client)
        url = f"/agents/{agent}/messages/search"
        for params in (
            {"q": "x", "mode": "semantic"},
            {"q": "x", "mode": "semantic", "session_id": "nope"},
        ):
            refused = client.get(url, params=params)
            assert refused.status_code == 400
            assert refused.json()["code"] == "semantic_search_unavailable"


def test_a_session_and_another_conversation_find_nothing(
    tmp_path: Path, clock: FrozenClock
) -> None:
    settings = Settings(sqlite_path=tmp_path / "s.db", encryption_key="k" * 40)
    with running(settings, clock) as client:
        agent = new_agent(client)
        said = client.post(
            "/chat",
            json={
                "agent_id": agent,
                "prompt": "Remember the red door",
                "session_id": "s1",
                "stream": False,
            },
        )
        assert said.status_code == 200
        other = client.post("/conversations", json={"agent_id": agent}).json()["id"]
        url = f"/agents/{agent}/messages/search"
        both = client.get(
            url, params={"q": "red door", "session_id": "s1", "conversation_id": other}
        )
        assert both.json()["total"] == 0
        session = client.get(url, params={"q": "red door", "session_id": "s1"})
        assert session.json()["total"] > 0


def test_reembed_with_an_unreachable_backend_exits_2(tmp_path: Path) -> None:
    env = {
        "SQLITE_PATH": str(tmp_path / "r.db"),
        "MEMORY_EMBEDDING_BACKEND": "ollama",
        "OLLAMA_BASE_URL": "http://127.0.0.1:9",
    }
    result = run_cli("reembed", env=env)
    assert result.returncode == 2
    assert "OLLAMA_BASE_URL" in result.stderr


async def test_a_static_model_directory_named_in_the_settings(tmp_path: Path) -> None:
    import json
    import shutil

    from api.embeddings import static
    from api.embeddings.factory import start_embedder

    copy = tmp_path / "my-static"
    shutil.copytree(static.MODEL_DIR, copy)
    config = json.loads((copy / "config.json").read_text())
    config["model_id"] = "my-own-static"
    (copy / "config.json").write_text(json.dumps(config))
    settings = Settings(
        sqlite_path=tmp_path / "x.db",
        memory_embedding_backend="static",
        memory_embedding_model=str(copy),
    )
    embedder = await start_embedder(settings)
    assert embedder is not None
    assert embedder.model_id == "static:my-own-static"
    assert embedder.embed(["hello"]).shape == (1, 256)
