"""GET /conversations/{id}/messages?order=newest: the latest page first, the cursor going back
in time (how the chat page shows a long conversation and pages earlier messages)."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(sqlite_path=tmp_path / "o.db", encryption_key="k" * 40)
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


def test_newest_first_pages_back_in_time(client: TestClient) -> None:
    agent = client.post("/agents", json={"name": "Pager"}).json()
    conversation = client.post("/conversations", json={"agent_id": agent["id"]}).json()
    path = f"/conversations/{conversation['id']}/messages"
    for i in range(3):
        turn = client.post(path, json={"content": f"Message {i}", "stream": False})
        assert turn.status_code == 200, turn.text
    everything = client.get(path, params={"limit": 100}).json()["messages"]
    assert len(everything) >= 6

    seen, cursor = [], None
    while True:
        params = {"order": "newest", "limit": "4", **({"cursor": cursor} if cursor else {})}
        page = client.get(path, params=params).json()
        seen += page["messages"]
        cursor = page["cursor"]
        if cursor is None:
            break
    assert [m["id"] for m in seen] == [m["id"] for m in reversed(everything)]
    assert seen[-1]["content"] == "Message 0"


def test_a_cursor_of_the_other_order_or_an_unknown_order_is_refused(client: TestClient) -> None:
    agent = client.post("/agents", json={"name": "Pager"}).json()
    conversation = client.post("/conversations", json={"agent_id": agent["id"]}).json()
    path = f"/conversations/{conversation['id']}/messages"
    for i in range(2):
        client.post(path, json={"content": f"Message {i}", "stream": False})
    oldest = client.get(path, params={"limit": 1}).json()
    mixed = client.get(path, params={"order": "newest", "limit": 1, "cursor": oldest["cursor"]})
    assert mixed.status_code == 400
    assert mixed.json()["code"] == "invalid_cursor"
    unknown = client.get(path, params={"order": "sideways"})
    assert unknown.status_code == 422
    assert unknown.json()["code"] == "validation_error"
