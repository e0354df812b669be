"""`GET /agents/{id}/memory/archival?category=...`: an agent's memories of some categories,
newest first, with their total, page after page."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.main import create_app

MEMORIES = [  # oldest first
    {"content": "REST APIs typically use JSON format", "category": "fact"},
    {"content": "Users often ask about API authentication", "category": "pattern"},
    {"content": "A note without a category"},
    {"content": "PostgreSQL default port is 5432", "category": "fact", "confidence": 0.8},
    {
        "content": "API endpoint is https://api.example.com/v1",
        "category": "fact",
        "context": "API integration discussion",
    },
]


@pytest.fixture
def client(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    settings = Settings(sqlite_path=tmp_path / "m.db", encryption_key="k" * 40)
    with TestClient(create_app(settings, clock=clock), base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def base(client: TestClient, clock: FrozenClock) -> str:
    agent_id = client.post("/agents", json={"name": "Sorter"}).json()["id"]
    url = f"/agents/{agent_id}/memory/archival"
    for memory in MEMORIES:
        clock.advance(1)
        assert client.post(url, json=memory).status_code == 201
    return url


def contents(page: dict[str, object]) -> list[str]:
    memories = page["memories"]
    assert isinstance(memories, list)
    return [m["content"] for m in memories]


def test_listed_by_category_newest_first_with_the_total(client: TestClient, base: str) -> None:
    first = client.get(base, params={"category": "fact", "limit": 2})
    assert first.status_code == 200, first.text
    page = first.json()
    assert contents(page) == [
        "API endpoint is https://api.example.com/v1",
        "PostgreSQL default port is 5432",
    ]
    assert page["total"] == 3
    newest = page["memories"][0]
    assert (newest["category"], newest["context"], newest["confidence"]) == (
        "fact",
        "API integration discussion",
        None,
    )
    assert page["memories"][1]["confidence"] == 0.8
    assert page["cursor"] == page["memories"][1]["id"]
    rest = client.get(base, params={"category": "fact", "limit": 2, "cursor": page["cursor"]})
    assert (contents(rest.json()), rest.json()["total"], rest.json()["cursor"]) == (
        ["REST APIs typically use JSON format"],
        3,
        None,
    )
    both = client.get(base, params={"category": ["fact", "pattern"]}).json()
    assert contents(both) == [
        "API endpoint is https://api.example.com/v1",
        "PostgreSQL default port is 5432",
        "Users often ask about API authentication",
        "REST APIs typically use JSON format",
    ]
    assert both["total"] == 4
    assert client.get(base, params={"category": "capability"}).json() == {
        "memories": [],
        "cursor": None,
        "total": 0,
    }


def test_without_a_category_the_listing_is_as_before(client: TestClient, base: str) -> None:
    page = client.get(base, params={"limit": 4}).json()
    assert contents(page)[2] == "A note without a category"
    assert page["total"] is None
    assert page["cursor"]  # the table's own cursor
    rest = client.get(base, params={"limit": 4, "cursor": page["cursor"]}).json()
    assert contents(rest) == ["REST APIs typically use JSON format"]


def test_bad_categories_and_cursors_are_refused(client: TestClient, base: str) -> None:
    assert client.get(base, params={"category": "opinion"}).status_code == 422
    refused = client.get(base, params={"category": "fact", "cursor": "not-a-memory-id"})
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid_cursor")
    # A listing's cursor continues only its own kind of listing.
    table_cursor = client.get(base, params={"limit": 1}).json()["cursor"]
    crossed = client.get(base, params={"category": "fact", "cursor": table_cursor})
    assert (crossed.status_code, crossed.json()["code"]) == (400, "invalid_cursor")
    id_cursor = client.get(base, params={"category": "fact", "limit": 1}).json()["cursor"]
    crossed = client.get(base, params={"cursor": id_cursor})
    assert (crossed.status_code, crossed.json()["code"]) == (400, "invalid_cursor")
