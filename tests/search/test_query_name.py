"""One name for what a search looks for: every search route takes `query` (the one the
document gives) and `q` (message search's former name) alike; both at once, with different
values, is a 400 `conflicting_query`. Over HTTP, on the four search routes."""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.runtime.conftest import running

SUBJECT = "customer_9"


@dataclass(frozen=True)
class Searches:
    client: TestClient
    agent: str  # an agent with a message and an archival memory about Lisbon
    subject_agent: str  # seed 004's subject's agent, with a memory about Lisbon


@pytest.fixture
def searches(tmp_path: Path, clock: FrozenClock) -> Iterator[Searches]:
    # Lexical search only: what is found does not hang on a model.
    settings = Settings(
        sqlite_path=tmp_path / "app.db", encryption_key="k" * 40, memory_embedding_backend="none"
    )
    with running(settings, clock) as client:
        made = client.post("/agents", json={"name": "my_agent"})
        assert made.status_code == 201, made.text
        agent = made.json()["id"]
        said = {"agent_name": "my_agent", "role": "user", "content": "My sister lives in Lisbon"}
        assert client.post("/messages", json=said).status_code == 201
        memory = {"content": "Booked a trip to Lisbon in May"}
        assert client.post(f"/agents/{agent}/memory/archival", json=memory).status_code == 201
        subject = client.post("/memory/initialize", json={"user_id": SUBJECT})
        assert subject.status_code == 200, subject.text
        subject_agent = subject.json()["agent_id"]
        stored = client.post(f"/agents/{subject_agent}/memory/archival", json=memory)
        assert stored.status_code == 201, stored.text
        yield Searches(client, agent, subject_agent)


def message_search(s: Searches, **words: str) -> httpx2.Response:
    return s.client.get(f"/agents/{s.agent}/messages/search", params=words)


def archival_search(s: Searches, **words: str) -> httpx2.Response:
    return s.client.get(f"/agents/{s.agent}/memory/archival/search", params=words)


def seed002_search(s: Searches, **words: str) -> httpx2.Response:
    return s.client.post("/messages/search", json={"agent_name": "my_agent", **words})


def seed004_search(s: Searches, **words: str) -> httpx2.Response:
    return s.client.get("/memory/search", params={"user_id": SUBJECT, **words})


def found_message(answer: httpx2.Response) -> list[str]:
    return [m["content"] for m in answer.json()["messages"]]


def found_memory(answer: httpx2.Response) -> list[str]:
    return [m["content"] for m in answer.json()["memories"]]


def found_seed002(answer: httpx2.Response) -> list[str]:
    return [m["content"] for m in answer.json()]


def found_seed004(answer: httpx2.Response) -> list[str]:
    results: list[str] = answer.json()["results"]
    return results


ROUTES = {
    "messages": (message_search, found_message, "My sister lives in Lisbon", "query"),
    "archival": (archival_search, found_memory, "Booked a trip to Lisbon in May", "query"),
    "seed002": (seed002_search, found_seed002, "My sister lives in Lisbon", "body"),
    "seed004": (seed004_search, found_seed004, "Booked a trip to Lisbon in May", "query"),
}


@pytest.mark.parametrize("route", ROUTES)
def test_query_and_q_are_one_parameter(searches: Searches, route: str) -> None:
    search, found, expected, _ = ROUTES[route]
    for words in ({"query": "Lisbon"}, {"q": "Lisbon"}, {"query": "Lisbon", "q": "Lisbon"}):
        answer = search(searches, **words)
        assert answer.status_code == 200, (words, answer.text)
        assert found(answer) == [expected], words
    nothing = search(searches, q="zanzibar")
    assert nothing.status_code == 200, nothing.text
    assert found(nothing) == []


@pytest.mark.parametrize("route", ROUTES)
def test_both_with_different_values_is_a_400(searches: Searches, route: str) -> None:
    search, _, _, _ = ROUTES[route]
    refused = search(searches, query="Lisbon", q="zanzibar")
    assert refused.status_code == 400, refused.text
    body = refused.json()
    assert body["code"] == "conflicting_query"
    assert body["message"] == (
        "Give the search query once: `query` and `q` (its alias) were both given, "
        "with different values."
    )
    assert body["request_id"]
    if route == "seed004":
        assert body["success"] is False  # seed 004's shape, as its other errors


@pytest.mark.parametrize("route", ROUTES)
def test_neither_or_an_invalid_one_is_a_validation_error(searches: Searches, route: str) -> None:
    search, _, _, where = ROUTES[route]
    cases: list[tuple[dict[str, str], list[str]]] = [
        ({}, [where, "query"]),
        ({"q": ""}, [where, "q"]),
        ({"q": "x" * 2001}, [where, "q"]),
        ({"query": ""}, [where, "query"]),
    ]
    for words, location in cases:
        refused = search(searches, **words)
        assert refused.status_code == 422, (words, refused.text)
        body: dict[str, Any] = refused.json()
        assert body["code"] == "validation_error"
        assert [e["loc"] for e in body["details"]["errors"]] == [location], words


def test_the_document_names_query_only(searches: Searches) -> None:
    doc = searches.client.get("/openapi.json").json()
    for path in (
        "/agents/{agent_id}/messages/search",
        "/agents/{agent_id}/memory/archival/search",
        "/memory/search",
    ):
        operation = doc["paths"][path]["get"]
        named = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
        assert "q" not in named, path
        assert named["query"]["required"] is True, path
        assert "`q`" in named["query"]["description"], path
        assert "`conflicting_query`" in operation["responses"]["400"]["description"], path
    body = doc["components"]["schemas"]["SearchIn"]
    assert "query" in body["required"]
    assert "q" not in body["properties"]
    seed002 = doc["paths"]["/messages/search"]["post"]["responses"]["400"]
    assert "`conflicting_query`" in seed002["description"]
