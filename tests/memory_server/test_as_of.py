"""`as_of` on seed 002's POST /messages/search and POST /context/{agent_name}: the messages
said by that moment, as the search would have answered then (ours, beside the seed's
fields, which answer as before)."""

from datetime import UTC, datetime
from typing import Any

from fastapi.testclient import TestClient

from api.kit.clock import FrozenClock
from tests.memory_server.conftest import new_agent, post_message

DAY = 86_400


def moment(clock: FrozenClock) -> str:
    return datetime.fromtimestamp(clock.now(), UTC).isoformat()


def contents(found: list[dict[str, Any]]) -> list[Any]:
    return [m["content"] for m in found]


def test_search_and_context_answer_as_of_a_moment(api: TestClient, clock: FrozenClock) -> None:
    new_agent(api)
    api.post(
        "/memory-blocks", json={"agent_name": "my_agent", "label": "human", "value": "Name: Ada"}
    )
    post_message(api, clock, "I live in Lisbon")
    then = moment(clock)
    clock.advance(DAY)
    post_message(api, clock, "I live in Porto")

    def search(**fields: object) -> list[Any]:
        body = {"agent_name": "my_agent", "query": "where do I live", **fields}
        found = api.post("/messages/search", json=body)
        assert found.status_code == 200, found.text
        return contents(found.json())

    def context(**fields: object) -> dict[str, Any]:
        answered = api.post("/context/my_agent", json={"query": "where do I live", **fields})
        assert answered.status_code == 200, answered.text
        found: dict[str, Any] = answered.json()
        return found

    assert sorted(search()) == ["I live in Lisbon", "I live in Porto"]
    assert search(as_of=then) == ["I live in Lisbon"]
    now = context()
    assert sorted(contents(now["relevant_messages"])) == ["I live in Lisbon", "I live in Porto"]
    past = context(as_of=then)
    assert contents(past["relevant_messages"]) == ["I live in Lisbon"]
    # The blocks are as they are now.
    assert past["memory_blocks"] == now["memory_blocks"]
    # Before anything was said, nothing was.
    assert search(as_of="2001-01-01") == []
    # A date alone is the end of that day (UTC): what was said that day is in.
    day = datetime.fromtimestamp(clock.now(), UTC).date().isoformat()
    assert sorted(search(as_of=day)) == ["I live in Lisbon", "I live in Porto"]


def test_a_moment_that_is_no_moment_is_refused(api: TestClient, clock: FrozenClock) -> None:
    new_agent(api)
    for path, body in [
        ("/messages/search", {"agent_name": "my_agent", "query": "x", "as_of": "last week"}),
        ("/context/my_agent", {"query": "x", "as_of": "2025-13-40"}),
    ]:
        answered = api.post(path, json=body)
        assert answered.status_code == 422, answered.text
        assert answered.json()["code"] == "validation_error"
