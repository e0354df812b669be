"""An agent's memory over HTTP, and what deleting the agent takes with it."""

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.conversations.messages.models import Message
from api.conversations.models import Conversation, SessionLookup
from api.main import create_app
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(sqlite_path=tmp_path / "m.db", encryption_key="k" * 40)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def agent_id(client: TestClient) -> str:
    created = client.post("/agents", json={"name": "Helper", "persona": "Kind and brief."})
    agent: str = created.json()["id"]
    return agent


def test_a_new_agent_has_its_default_blocks(client: TestClient, agent_id: str) -> None:
    blocks = client.get(f"/agents/{agent_id}/memory/blocks").json()
    assert [b["name"] for b in blocks] == ["human", "persona"]
    persona = blocks[1]
    assert persona["lines"] == ["Kind and brief."]
    assert persona["word_limit"] == 5000
    assert persona["percent_used"] == 0
    assert persona["warning"] is False


def test_blocks_can_be_created_edited_and_deleted(client: TestClient, agent_id: str) -> None:
    base = f"/agents/{agent_id}/memory/blocks"
    created = client.post(
        base,
        json={
            "name": "My Projects",
            "description": "What I build",
            "word_limit": 10,
            "content": "Agent memory platform",
        },
    )
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "my_projects"
    edited = client.patch(
        f"{base}/my_projects", json={"lines": ["one two three four", "five six seven eight"]}
    )
    assert edited.json()["word_count"] == 8
    assert edited.json()["warning"] is True  # 80% of 10 words
    assert client.get(f"{base}/My Projects").json()["lines"][0] == "one two three four"
    too_long = client.patch(f"{base}/my_projects", json={"lines": ["w " * 11]})
    assert too_long.status_code == 409
    assert client.delete(f"{base}/my_projects").status_code == 204
    missing = client.get(f"{base}/my_projects")
    assert missing.status_code == 404
    protected = client.delete(f"{base}/human")
    assert protected.status_code == 409
    assert client.post(base, json={"name": "!!!"}).status_code == 400


def test_archival_memories(client: TestClient, agent_id: str) -> None:
    base = f"/agents/{agent_id}/memory/archival"
    first = client.post(base, json={"content": "Ada drinks coffee every morning."})
    assert first.status_code == 201
    again = client.post(base, json={"content": "Ada drinks coffee every morning."})
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    for i in range(6):
        client.post(base, json={"content": f"Coffee note {i}: espresso."})
    client.post(base, json={"content": "Ada likes hiking."})
    listed = client.get(base, params={"limit": 5}).json()
    assert len(listed["memories"]) == 5
    assert listed["cursor"]
    found = client.get(f"{base}/search", params={"query": "coffee"}).json()
    assert (found["total"], found["pages"], len(found["memories"])) == (7, 2, 5)
    second = client.get(f"{base}/search", params={"query": "coffee", "page": 2}).json()
    assert len(second["memories"]) == 2
    assert client.get(f"{base}/search", params={"query": ""}).status_code == 422
    memory_id = first.json()["id"]
    assert client.get(f"{base}/{memory_id}").json()["content"].startswith("Ada drinks")
    assert client.delete(f"{base}/{memory_id}").status_code == 204
    assert client.get(f"{base}/{memory_id}").status_code == 404


async def test_deleting_an_agent_removes_its_memory_and_conversations(
    client: TestClient, agent_id: str, settings: Settings
) -> None:
    client.post(f"/agents/{agent_id}/memory/archival", json={"content": "A fact."})
    when = datetime(2026, 1, 1, tzinfo=UTC)
    table = SqliteTable(settings.sqlite_path, settings.dynamodb_table, load_definition())
    owner = "local@localhost"
    await table.batch_write(
        puts=[
            Conversation(
                conversation_id="c1",
                created_by=owner,
                agent_id=agent_id,
                created_at=when,
                updated_at=when,
            ).to_dynamo_item(),
            Message(
                conversation_id="c1", message_id="m1", role="user", content="hi", created_at=when
            ).to_dynamo_item(),
            SessionLookup(
                created_by=owner, agent_id=agent_id, session_id="s1", conversation_id="c1"
            ).to_dynamo_item(),
        ]
    )
    await table.close()
    assert client.delete(f"/agents/{agent_id}").status_code == 204
    remaining = (
        sqlite3.connect(settings.sqlite_path)
        .execute('SELECT pk, sk FROM "agent-memory"')
        .fetchall()
    )
    leftovers = [row for row in remaining if agent_id in row[0] + row[1] or "c1" in row[0] + row[1]]
    assert leftovers == []
    assert client.get(f"/agents/{agent_id}/memory/blocks").status_code == 404


def test_archival_memories_keep_category_context_confidence_and_tags(
    client: TestClient, agent_id: str, settings: Settings
) -> None:
    base = f"/agents/{agent_id}/memory/archival"
    fact = {
        "content": "The API requires a bearer token.",
        "category": "fact",
        "context": "API integration discussion",
        "confidence": 1,
        "tags": ["assistant"],
    }
    created = client.post(base, json=fact)
    assert created.status_code == 201, created.text
    kept = {k: created.json()[k] for k in ("category", "context", "confidence", "tags")}
    assert kept == {**{k: fact[k] for k in kept}, "confidence": 1.0}
    # Idempotent by content: the same text again is the memory as first stored.
    again = client.post(base, json={"content": fact["content"], "category": "pattern"})
    assert (again.status_code, again.json()["category"]) == (200, "fact")
    client.post(base, json={"content": "Ada prefers bearer tokens too.", "tags": ["user"]})
    client.post(base, json={"content": "Bearer tokens: a preference.", "category": "preference"})

    def found(**params: str | list[str]) -> list[str]:
        got = client.get(f"{base}/search", params={"query": "bearer token", **params})
        assert got.status_code == 200, got.text
        return sorted(m["content"] for m in got.json()["memories"])

    assert found(category="fact") == ["The API requires a bearer token."]
    assert found(category=["fact", "preference"]) == [
        "Bearer tokens: a preference.",
        "The API requires a bearer token.",
    ]
    assert found(tags="user") == ["Ada prefers bearer tokens too."]
    assert found(tags=["user", "fact"]) == [  # a tag, or a category named as one
        "Ada prefers bearer tokens too.",
        "The API requires a bearer token.",
    ]
    # Another instance loads the index from the table: the fields come back with it.
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as other:
        hits = other.get(f"{base}/search", params={"query": "API requires", "category": "fact"})
        (hit,) = hits.json()["memories"]
        assert (hit["context"], hit["confidence"], hit["tags"]) == (
            "API integration discussion",
            1.0,
            ["assistant"],
        )


@pytest.mark.parametrize(
    "bad",
    [
        {"category": "opinion"},
        {"confidence": True},
        {"confidence": "0.5"},
        {"confidence": 1.5},
        {"tags": ["no spaces"]},
        {"tags": [""]},
        {"context": "x" * 2001},
    ],
)
def test_bad_archival_fields_are_refused(
    client: TestClient, agent_id: str, bad: dict[str, object]
) -> None:
    refused = client.post(
        f"/agents/{agent_id}/memory/archival", json={"content": "Something.", **bad}
    )
    assert refused.status_code == 422, refused.text
    listed = client.get(f"/agents/{agent_id}/memory/archival").json()["memories"]
    assert listed == []


def test_a_bad_category_filter_is_refused(client: TestClient, agent_id: str) -> None:
    refused = client.get(
        f"/agents/{agent_id}/memory/archival/search", params={"query": "x", "category": "opinion"}
    )
    assert refused.status_code == 422
