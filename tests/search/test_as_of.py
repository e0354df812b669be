"""`as_of` on message search over HTTP: the search answers as it would have then, with the
messages said by that moment; a moment that is not a date is refused."""

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.main import create_app


@pytest.fixture
def client(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    settings = Settings(
        sqlite_path=tmp_path / "m.db", encryption_key="k" * 40, memory_embedding_backend="static"
    )
    with TestClient(create_app(settings, clock=clock), base_url="http://127.0.0.1") as client:
        yield client


def test_message_search_as_of_a_day(client: TestClient, clock: FrozenClock) -> None:
    made = client.post("/agents", json={"name": "diary", "event_expiry_days": 0})  # kept
    agent = made.json()["id"]
    for day, text in [(3, "I live in Lisbon"), (20, "I moved to Porto, I live in Porto now")]:
        clock.set(datetime(2025, 3, day, 12, tzinfo=UTC).timestamp())
        said = {"agent_name": "diary", "role": "user", "content": text}
        assert client.post("/messages", json=said).status_code == 201
    clock.set(datetime(2025, 6, 1, tzinfo=UTC).timestamp())
    url = f"/agents/{agent}/messages/search"

    def found(**params: str) -> list[str]:
        answer = client.get(url, params={"query": "where do I live", "mode": "lexical", **params})
        assert answer.status_code == 200, answer.text
        return [m["content"] for m in answer.json()["messages"]]

    assert len(found()) == 2
    assert found(as_of="2025-03-10") == ["I live in Lisbon"]
    assert found(as_of="2025-03-03") == ["I live in Lisbon"]  # that day, to its end
    assert found(as_of="2025-03-03T11:00:00Z") == []
    assert found(as_of="2025-03-20T13:00:00+02:00") == ["I live in Lisbon"]  # 11:00 UTC
    bad = client.get(url, params={"query": "live", "as_of": "the day before"})
    assert bad.status_code == 422
