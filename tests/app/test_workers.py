"""`serve --workers 2`: two processes on one SQLite file, and on one DynamoDB Local table,
stay correct: memories written through either are found through either at once and, once
deleted, never returned by either; turns in one conversation never interleave; and seed
004's memory runs of one subject run once each, in order. Every request opens its own
connection, so both workers take requests."""

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

from api.store.dynamodb_local import DynamoDBLocal
from tests.fakes.serving import server_process
from tests.memory_layer.conftest import until_ended


@contextmanager
def two_workers(env: dict[str, str]) -> Iterator[str]:
    settings = {"ENCRYPTION_KEY": "k" * 40, "MEMORY_EMBEDDING_BACKEND": "none", **env}
    with server_process(settings, workers=2) as server:
        yield server.root


@pytest.fixture(params=["sqlite", "dynamodb_local"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        env = {"STORE": "sqlite", "SQLITE_PATH": str(tmp_path / "shared.db")}
    else:
        local: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
        env = {
            "STORE": "dynamodb",
            "DYNAMODB_ENDPOINT": local.endpoint,
            "DYNAMODB_TABLE": f"workers-{uuid.uuid4().hex[:8]}",
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
        }
    with two_workers(env) as root:
        yield root


def call(method: str, url: str, **kwargs: object) -> httpx2.Response:
    """One request on a connection of its own (either worker may take it)."""
    with httpx2.Client(timeout=60) as client:
        return client.request(method, url, **kwargs)  # type: ignore[arg-type]


def test_two_workers_share_memories_and_take_turns_one_at_a_time(server: str) -> None:
    created = call("POST", f"{server}/agents", json={"name": "Shared"})
    assert created.status_code == 201, created.text
    agent = f"{server}/agents/{created.json()['id']}"
    facts = [f"Fact number {i} about zebras" for i in range(12)]
    with ThreadPoolExecutor(6) as pool:
        stored = list(
            pool.map(lambda f: call("POST", f"{agent}/memory/archival", json={"content": f}), facts)
        )
    assert [r.status_code for r in stored] == [201] * len(facts)
    for _ in range(6):  # each search on a fresh connection: every one sees every write
        found = call(
            "GET", f"{agent}/memory/archival/search", params={"query": "zebras", "limit": 50}
        )
        assert found.json()["total"] == len(facts)

    # Deleted through either worker, never returned by either (each search on a fresh
    # connection, so both answer some).
    ids = [r.json()["id"] for r in stored]
    gone, kept = ids[::2], ids[1::2]
    with ThreadPoolExecutor(6) as pool:
        deleted = list(pool.map(lambda i: call("DELETE", f"{agent}/memory/archival/{i}"), gone))
    assert [r.status_code for r in deleted] == [204] * len(gone)
    for _ in range(6):
        found = call(
            "GET", f"{agent}/memory/archival/search", params={"query": "zebras", "limit": 50}
        )
        assert sorted(hit["id"] for hit in found.json()["memories"]) == sorted(kept)

    body = {"agent_id": created.json()["id"], "prompt": "hello", "stream": False, "wait": True}
    with ThreadPoolExecutor(4) as pool:
        turns = list(pool.map(lambda _: call("POST", f"{server}/chat", json=body), range(4)))
    assert [t.status_code for t in turns] == [200] * 4, [t.text for t in turns]
    (conversation,) = {t.json()["conversation_id"] for t in turns}
    listed = call("GET", f"{server}/conversations/{conversation}/messages", params={"limit": 100})
    roles = [m["role"] for m in listed.json()["messages"] if m["role"] in ("user", "assistant")]
    assert roles == ["user", "assistant"] * 4  # never two questions before an answer


def test_two_workers_run_a_subjects_memory_runs_once_each_and_in_order(server: str) -> None:
    """Seed 004's memory runs (the offline model), adds taken by either worker: one after
    another they keep their order; sent together, each runs once and none is lost."""
    for subject in ("in-order", "together"):
        made = call("POST", f"{server}/memory/initialize", json={"user_id": subject})
        assert made.status_code == 200, made.text

    def add(subject: str, text: str) -> str:
        body = {
            "user_id": subject,
            "messages": [{"role": "user", "content": text}],
            "wait_for_completion": False,
        }
        added = call("POST", f"{server}/memory/add", json=body)
        assert added.status_code == 202, added.text
        run_id: str = added.json()["run_id"]
        return run_id

    in_order = [add("in-order", f"Message {i}") for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda i: add("together", f"Note {i}"), range(4)))

    with httpx2.Client(base_url=server, timeout=60) as http:
        for run_id in in_order + together:
            run = until_ended(http, run_id, seconds=60)
            assert (run["status"], run["attempts"]) == ("completed", 1), run

    def summary(subject: str) -> list[str]:
        got = call("GET", f"{server}/memory/summary", params={"user_id": subject, "format": "raw"})
        assert got.status_code == 200, got.text
        lines: list[str] = got.json()["summary"].splitlines()
        return lines

    assert summary("in-order") == [f"1 message. User: Message {i}" for i in range(4)]
    assert sorted(summary("together")) == [f"1 message. User: Note {i}" for i in range(4)]
