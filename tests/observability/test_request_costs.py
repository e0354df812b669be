"""The table's calls of the requests docs/scaling.md prices, counted through a table
wrapper, so that a change cannot quietly add writes: a search writes nothing, seed 004's
`/memory/add` is one transaction (its memory run works after it), seed 002's capture one."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app
from api.store.definition import load_definition
from api.store.rounds import WRITES, RoundCounter
from api.store.sqlite import SqliteTable


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[tuple[TestClient, RoundCounter, str]]:
    counter = RoundCounter(SqliteTable(tmp_path / "c.db", "costs", load_definition()))
    settings = Settings(sqlite_path=tmp_path / "c.db", dynamodb_table="costs")
    with TestClient(create_app(settings, table=counter), base_url="http://127.0.0.1") as c:
        agent = c.post("/agents", json={"name": "Ada"}).json()["id"]
        assert c.post("/memory/initialize", json={"user_id": "ada"}).status_code == 200
        c.post(f"/agents/{agent}/memory/archival", json={"content": "I love pizza."})
        c.get(f"/agents/{agent}/memory/archival/search", params={"query": "warm"})
        yield c, counter, agent


def writes_of(counter: RoundCounter, mark: int) -> list[str]:
    return [c.operation for c in counter.since(mark) if c.operation in WRITES]


def test_a_search_reads_twice_and_writes_nothing(
    counted: tuple[TestClient, RoundCounter, str],
) -> None:
    client, counter, agent = counted
    mark = counter.mark()
    found = client.get(f"/agents/{agent}/memory/archival/search", params={"query": "food"})
    assert found.status_code == 200
    calls = counter.since(mark)
    assert writes_of(counter, mark) == []
    assert len(calls) == 2  # the agent (ownership), the search's version


def test_memory_add_and_a_capture_are_one_write_each(
    counted: tuple[TestClient, RoundCounter, str],
) -> None:
    client, counter, _ = counted
    mark = counter.mark()
    body = {"user_id": "ada", "messages": [{"role": "user", "content": "I prefer tea."}]}
    added = client.post("/memory/add", json={**body, "wait_for_completion": True})
    assert added.status_code == 200, added.text
    # The messages, their copies, the archival memory, the run queued: one transaction;
    # then the run's own writes (its lease, its state, the blocks it edits).
    assert writes_of(counter, mark)[:1] == ["transact_write"]
    capture = {"agent_name": "Ada", "role": "user", "content": "Hi"}
    assert client.post("/messages", json=capture).status_code == 201  # opens its session
    mark = counter.mark()
    captured = client.post("/messages", json={**capture, "content": "Hi again"})
    assert captured.status_code == 201, captured.text
    assert writes_of(counter, mark) == ["transact_write"]  # the message with its copy
