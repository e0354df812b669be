"""`serve --workers 2`: two processes on one SQLite file, and on one DynamoDB Local table,
stay correct: memories written through either are found through either at once, and turns
in one conversation never interleave. Every request opens its own connection, so both
workers take requests."""

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

from api.store.dynamodb_local import DynamoDBLocal
from tests.fakes.serving import server_process


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

    body = {"agent_id": created.json()["id"], "prompt": "hello", "stream": False, "wait": True}
    with ThreadPoolExecutor(4) as pool:
        turns = list(pool.map(lambda _: call("POST", f"{server}/chat", json=body), range(4)))
    assert [t.status_code for t in turns] == [200] * 4, [t.text for t in turns]
    (conversation,) = {t.json()["conversation_id"] for t in turns}
    listed = call("GET", f"{server}/conversations/{conversation}/messages", params={"limit": 100})
    roles = [m["role"] for m in listed.json()["messages"] if m["role"] in ("user", "assistant")]
    assert roles == ["user", "assistant"] * 4  # never two questions before an answer
