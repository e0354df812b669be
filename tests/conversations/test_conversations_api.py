"""/conversations over HTTP: a user's sessions with an agent, and their messages in order."""

import asyncio
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.conversations.messages.models import Message
from api.kit.clock import FrozenClock
from api.main import create_app
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(sqlite_path=tmp_path / "c.db", encryption_key="k" * 40)


@pytest.fixture
def client(settings: Settings, clock: FrozenClock) -> Iterator[TestClient]:
    with TestClient(create_app(settings, clock=clock), base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def agent_id(client: TestClient) -> str:
    agent: str = client.post("/agents", json={"name": "Helper"}).json()["id"]
    return agent


def write_messages(settings: Settings, conversation_id: str, count: int) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)

    async def write() -> None:
        table = SqliteTable(settings.sqlite_path, settings.dynamodb_table, load_definition())
        await table.batch_write(
            puts=[
                Message(
                    conversation_id=conversation_id,
                    message_id=f"m{i:02d}",
                    role="user" if i % 2 == 0 else "assistant",
                    content=f"message {i}",
                    created_at=start + timedelta(seconds=i),
                ).to_dynamo_item()
                for i in range(count)
            ]
        )
        await table.close()

    asyncio.run(write())


def test_conversations_newest_first_with_pages(
    client: TestClient, agent_id: str, clock: FrozenClock
) -> None:
    ids = []
    for title in ("first", "second", "third"):
        created = client.post("/conversations", json={"agent_id": agent_id, "title": title})
        assert created.status_code == 201, created.text
        ids.append(created.json()["id"])
        clock.advance(1)
    page = client.get("/conversations", params={"agent_id": agent_id, "limit": 2}).json()
    assert [c["title"] for c in page["conversations"]] == ["third", "second"]
    rest = client.get(
        "/conversations", params={"agent_id": agent_id, "limit": 2, "cursor": page["cursor"]}
    ).json()
    assert [c["title"] for c in rest["conversations"]] == ["first"]
    assert rest["cursor"] is None
    renamed = client.patch(f"/conversations/{ids[0]}", json={"title": "renamed"})
    assert renamed.json()["title"] == "renamed"
    assert client.get(f"/conversations/{ids[0]}").json()["title"] == "renamed"


def test_messages_in_order_with_a_cursor_and_deleted_with_their_conversation(
    client: TestClient, agent_id: str, settings: Settings
) -> None:
    conversation = client.post("/conversations", json={"agent_id": agent_id}).json()["id"]
    write_messages(settings, conversation, 7)
    first = client.get(f"/conversations/{conversation}/messages", params={"limit": 5}).json()
    assert [m["content"] for m in first["messages"]] == [f"message {i}" for i in range(5)]
    second = client.get(
        f"/conversations/{conversation}/messages", params={"limit": 5, "cursor": first["cursor"]}
    ).json()
    assert [m["id"] for m in second["messages"]] == ["m05", "m06"]
    assert second["cursor"] is None
    assert client.delete(f"/conversations/{conversation}").status_code == 204
    assert client.get(f"/conversations/{conversation}").status_code == 404
    rows = (
        sqlite3.connect(settings.sqlite_path)
        .execute(
            'SELECT count(*) FROM "agent-memory" WHERE pk = ?', (f"CONVERSATION#{conversation}",)
        )
        .fetchone()
    )
    assert rows == (0,)


def test_bad_input(client: TestClient, agent_id: str) -> None:
    missing_agent = client.post("/conversations", json={"agent_id": "nope"})
    assert missing_agent.status_code == 404
    assert missing_agent.json()["code"] == "agent_not_found"
    assert client.get("/conversations").status_code == 422  # which agent's?
    assert client.get("/conversations/nope").json()["code"] == "conversation_not_found"
    assert client.patch("/conversations/nope", json={"title": "x"}).status_code == 404
    conversation = client.post("/conversations", json={"agent_id": agent_id}).json()["id"]
    bad_cursor = client.get(f"/conversations/{conversation}/messages", params={"cursor": "garbage"})
    assert bad_cursor.status_code == 400
    assert bad_cursor.json()["code"] == "invalid_cursor"
