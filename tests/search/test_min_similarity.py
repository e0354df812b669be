"""`min_similarity` on every search route, over HTTP with the default model: the least cosine
a semantic match needs, in place of the model's floor for that search. Asked high, a
paraphrase the floor admits is not found; asked low, looser matches are; out of [-1, 1] it
is refused as any invalid parameter is (in seed 004's shape on its route)."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.runtime.conftest import running

SUBJECT = "customer_7"
PIZZA = "I love pizza"
# Less like the question than the pizza (cosines about 0.13 and -0.02 with the default
# model), each under its floor: found only when asked for looser matches.
OTHERS = ["My car is red", "The meeting moved to Friday"]
QUESTION = "what food do I like?"  # shares no word with PIZZA: only its meaning finds it


@dataclass(frozen=True)
class Searches:
    client: TestClient
    agent: str  # an agent with these messages and archival memories
    subject_agent: str  # seed 004's subject's agent, with these archival memories


@pytest.fixture(scope="module")
def searches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Searches]:
    settings = Settings(
        sqlite_path=tmp_path_factory.mktemp("min_similarity") / "app.db",
        encryption_key="k" * 40,
    )
    assert settings.memory_embedding_backend == "onnx"  # the default, with its floor
    with running(settings, FrozenClock(1_750_000_000.0)) as client:
        made = client.post("/agents", json={"name": "my_agent"})
        assert made.status_code == 201, made.text
        agent = made.json()["id"]
        subject = client.post("/memory/initialize", json={"user_id": SUBJECT})
        assert subject.status_code == 200, subject.text
        subject_agent = subject.json()["agent_id"]
        for text in [PIZZA, *OTHERS]:
            said = {"agent_name": "my_agent", "role": "user", "content": text}
            assert client.post("/messages", json=said).status_code == 201
            for owner in (agent, subject_agent):
                stored = client.post(f"/agents/{owner}/memory/archival", json={"content": text})
                assert stored.status_code == 201, stored.text
        yield Searches(client, agent, subject_agent)


Search = Callable[[Searches, dict[str, Any]], httpx2.Response]
Found = Callable[[httpx2.Response], list[str]]


def message_search(s: Searches, words: dict[str, Any]) -> httpx2.Response:
    params = {"query": QUESTION, "mode": "semantic", **words}
    return s.client.get(f"/agents/{s.agent}/messages/search", params=params)


def archival_search(s: Searches, words: dict[str, Any]) -> httpx2.Response:
    params = {"query": QUESTION, "mode": "semantic", **words}
    return s.client.get(f"/agents/{s.agent}/memory/archival/search", params=params)


def seed002_search(s: Searches, words: dict[str, Any]) -> httpx2.Response:
    body = {"agent_name": "my_agent", "query": QUESTION, **words}
    return s.client.post("/messages/search", json=body)


def seed004_search(s: Searches, words: dict[str, Any]) -> httpx2.Response:
    return s.client.get("/memory/search", params={"user_id": SUBJECT, "query": QUESTION, **words})


def found_message(answer: httpx2.Response) -> list[str]:
    return [m["content"] for m in answer.json()["messages"]]


def found_memory(answer: httpx2.Response) -> list[str]:
    return [m["content"] for m in answer.json()["memories"]]


def found_seed002(answer: httpx2.Response) -> list[str]:
    return [m["content"] for m in answer.json()]


def found_seed004(answer: httpx2.Response) -> list[str]:
    results: list[str] = answer.json()["results"]
    return results


# Message and archival search in semantic mode; the seeds' routes have no mode (hybrid, the
# default with an embedding backend), where a match with no word in common is a semantic one.
ROUTES: dict[str, tuple[Search, Found, str]] = {
    "messages": (message_search, found_message, "query"),
    "archival": (archival_search, found_memory, "query"),
    "seed002": (seed002_search, found_seed002, "body"),
    "seed004": (seed004_search, found_seed004, "query"),
}


def _found(searches: Searches, route: str, **words: Any) -> list[str]:
    search, found, _ = ROUTES[route]
    answer = search(searches, words)
    assert answer.status_code == 200, (words, answer.text)
    return found(answer)


@pytest.mark.parametrize("route", ROUTES)
def test_the_models_floor_by_default(searches: Searches, route: str) -> None:
    assert _found(searches, route) == [PIZZA]


@pytest.mark.parametrize("route", ROUTES)
def test_a_high_one_finds_nothing_the_floor_admits(searches: Searches, route: str) -> None:
    assert _found(searches, route, min_similarity=0.99) == []
    assert _found(searches, route, min_similarity=1) == []


@pytest.mark.parametrize("route", ROUTES)
def test_a_low_one_finds_the_paraphrase_and_looser_matches(searches: Searches, route: str) -> None:
    assert _found(searches, route, min_similarity=0.2) == [PIZZA]
    everything = _found(searches, route, min_similarity=-1.0)
    assert everything[0] == PIZZA
    assert sorted(everything) == sorted([PIZZA, *OTHERS])


@pytest.mark.parametrize("route", ROUTES)
def test_out_of_range_is_a_validation_error(searches: Searches, route: str) -> None:
    search, _, where = ROUTES[route]
    wrong: list[Any] = [2, -1.5, "nan"]
    if where == "body":
        wrong += ["0.5", True]  # strict in a JSON body, as `limit` beside it
    for value in wrong:
        refused = search(searches, {"min_similarity": value})
        assert refused.status_code == 422, (value, refused.text)
        body: dict[str, Any] = refused.json()
        assert body["code"] == "validation_error"
        assert [e["loc"] for e in body["details"]["errors"]] == [[where, "min_similarity"]]
        if route == "seed004":
            assert body["success"] is False  # seed 004's shape, as its other errors


def test_the_document_describes_it(searches: Searches) -> None:
    doc = searches.client.get("/openapi.json").json()
    for path in (
        "/agents/{agent_id}/messages/search",
        "/agents/{agent_id}/memory/archival/search",
        "/memory/search",
    ):
        named = {p["name"]: p for p in doc["paths"][path]["get"]["parameters"]}
        parameter = named["min_similarity"]
        assert parameter["required"] is False, path
        assert "the model's floor" in parameter["description"], path
    body = doc["components"]["schemas"]["SearchIn"]
    assert "min_similarity" in body["properties"]
    assert "min_similarity" not in body.get("required", [])
