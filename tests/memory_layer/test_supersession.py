"""Facts that change, through seed 004's surface (ours, beside the seed's fields): an add's
message replaces archival memories it names (`supersedes`, dated by `valid_from`), the
reply says what was replaced, and /memory/search and /memory/context answer as of now, as
of a moment (`as_of`) or with the history (`include_history`), a replaced memory labelled
`(until YYYY-MM-DD)`."""

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi.testclient import TestClient

from tests.memory_layer.conftest import context, initialize, said, seed_error

QUESTION = "where do I live"


def add(
    client: TestClient, messages: list[dict[str, Any]], user_id: str = "customer_123", **body: Any
) -> dict[str, Any]:
    """POST /memory/add of messages with our fields (`supersedes`, `valid_from`)."""
    added = client.post("/memory/add", json={"user_id": user_id, "messages": messages, **body})
    assert added.status_code in (200, 202), added.text
    found: dict[str, Any] = added.json()
    return found


def search(client: TestClient, user_id: str = "customer_123", **params: Any) -> dict[str, Any]:
    got = client.get("/memory/search", params={"user_id": user_id, "query": QUESTION, **params})
    assert got.status_code == 200, got.text
    found: dict[str, Any] = got.json()
    return found


def memory_id(client: TestClient, content: str, user_id: str = "customer_123") -> str:
    """The id of the subject's current archival memory holding `content`."""
    found = search(client, user_id, include_history=True, max_results=50)
    ids = [m["id"] for m in found["memories"] if m["content"] == content]
    assert len(ids) == 1, found
    memory: str = ids[0]
    return memory


def lived(client: TestClient, user_id: str = "customer_123") -> tuple[str, str]:
    """Lisbon from 2024-01-01, then Porto from 2025-06-01 replacing it: their ids."""
    lisbon = {**said("user", "I live in Lisbon"), "valid_from": "2024-01-01T00:00:00Z"}
    added = add(client, [lisbon], user_id)
    assert added["replaced"] == added["not_replaced"] == added["notes"] == []
    old = memory_id(client, "I live in Lisbon", user_id)
    porto = {
        **said("user", "I live in Porto"),
        "valid_from": "2025-06-01T00:00:00Z",
        "supersedes": [old],
    }
    replacing = add(client, [porto], user_id)
    new = memory_id(client, "I live in Porto", user_id)
    assert replacing["notes"] == ["Replaced: 'I live in Lisbon' (2024-01-01) → 'I live in Porto'"]
    assert replacing["replaced"] == [
        {
            "id": old,
            "content": "I live in Lisbon",
            "valid_from": "2024-01-01T00:00:00Z",
            "superseded_at": "2025-06-01T00:00:00Z",
            "superseded_by": new,
        }
    ]
    assert replacing["not_replaced"] == []
    assert replacing["message"] == "Processed 1 message"  # the seed's own fields as they were
    return old, new


def test_a_message_replaces_the_memory_it_names(api: TestClient) -> None:
    initialize(api)
    old, new = lived(api)
    # Now: the current fact only.
    now = search(api)
    assert now["results"] == ["I live in Porto"]
    assert now["total_found"] == 1
    (current,) = now["memories"]
    assert current["superseded_at"] is None
    assert current["superseded_by"] is None
    assert current["valid_from"] == "2025-06-01T00:00:00Z"
    # With the history: the replaced one too, labelled.
    history = search(api, include_history="true")
    assert sorted(history["results"]) == ["I live in Lisbon (until 2025-06-01)", "I live in Porto"]
    replaced = next(m for m in history["memories"] if m["id"] == old)
    assert replaced["content"] == "I live in Lisbon"  # the text as it is; the label is render
    assert replaced["superseded_by"] == new
    # As of a moment: what was true then.
    assert search(api, as_of="2024-12-31")["results"] == ["I live in Lisbon (until 2025-06-01)"]
    assert search(api, as_of="2025-06-01T00:00:00Z")["results"] == ["I live in Porto"]
    assert search(api, as_of="2023-01-01")["results"] == []


def test_the_context_answers_as_of_a_moment(api: TestClient) -> None:
    initialize(api)
    lived(api)
    now = context(api, query=QUESTION)
    assert now["relevant_memories"] == ["User: I live in Porto"]
    assert now["combined_context"].endswith(
        "<relevant_memories>\n1. User: I live in Porto\n</relevant_memories>"
    )
    then = context(api, query=QUESTION, as_of="2024-12-31")
    assert then["relevant_memories"] == ["User: I live in Lisbon (until 2025-06-01)"]
    assert then["combined_context"].endswith(
        "<relevant_memories>\n1. User: I live in Lisbon (until 2025-06-01)\n</relevant_memories>"
    )
    (memory,) = then["memories"]
    assert memory["superseded_at"] == "2025-06-01T00:00:00Z"
    # The blocks are as they are now, whatever the moment.
    assert then["user_context"] == now["user_context"]
    # A question about the past finds the old fact without being asked to.
    before = context(api, query="where did I live before?")
    assert "User: I live in Lisbon (until 2025-06-01)" in before["relevant_memories"]


def test_a_memory_replaced_already_is_left_as_it_is_and_said(api: TestClient) -> None:
    initialize(api)
    old, new = lived(api)
    again = add(api, [{**said("user", "I live in Braga"), "supersedes": [old]}])
    assert again["replaced"] == []
    (kept,) = again["not_replaced"]
    assert (kept["id"], kept["superseded_by"]) == (old, new)
    assert again["notes"] == [
        f"Not replaced: 'I live in Lisbon' was already replaced by {new} (until 2025-06-01)"
    ]
    assert memory_id(api, "I live in Braga")  # stored all the same, as current
    assert search(api, include_history="true", as_of="2024-12-31")["results"] == [
        "I live in Lisbon (until 2025-06-01)"
    ]


def test_of_two_adds_replacing_one_memory_at_once_exactly_one_does(api: TestClient) -> None:
    initialize(api)
    add(api, [said("user", "I live in Lisbon")])
    old = memory_id(api, "I live in Lisbon")
    cities = ["Porto", "Braga"]

    def replace(city: str) -> dict[str, Any]:
        message = {**said("user", f"I live in {city}"), "supersedes": [old]}
        return add(api, [message], wait_for_completion=False)

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(replace, cities))
    winners = [a for a in answers if a["replaced"]]
    losers = [a for a in answers if a["not_replaced"]]
    assert len(winners) == len(losers) == 1, answers
    (replaced,) = winners[0]["replaced"]
    (kept,) = losers[0]["not_replaced"]
    assert replaced["superseded_by"] == kept["superseded_by"]  # the loser is told by whom
    assert losers[0]["notes"][0].startswith("Not replaced: 'I live in Lisbon' was already")
    # Nothing lost: both new memories are stored and current, the old one is history.
    current = search(api, max_results=10)["results"]
    assert sorted(current) == ["I live in Braga", "I live in Porto"]
    history = search(api, include_history="true", max_results=10)["results"]
    assert sum(r.startswith("I live in Lisbon (until ") for r in history) == 1


def test_an_unknown_memory_is_not_found_and_nothing_is_stored(api: TestClient) -> None:
    initialize(api)
    initialize(api, "customer_456")
    add(api, [said("user", "I live in Faro")], "customer_456")
    others = memory_id(api, "I live in Faro", "customer_456")
    for unknown in ["0" * 32, others]:  # no memory, and another subject's
        refused = api.post(
            "/memory/add",
            json={
                "user_id": "customer_123",
                "messages": [{**said("user", "I live in Porto"), "supersedes": [unknown]}],
            },
        )
        body = seed_error(refused, 404, "archival_memory_not_found")
        assert body["message"] == f"Archival memory {unknown} does not exist."
    assert search(api, include_history="true")["results"] == []
    listed = api.get("/messages/Memory: customer_123")  # the subject's agent, by its name
    assert listed.status_code == 200, listed.text
    assert listed.json() == []  # the add was refused whole: no message stored either
    # The other subject's memory is as it was.
    assert search(api, "customer_456")["results"] == ["I live in Faro"]


def test_supersedes_and_valid_from_that_cannot_apply_are_refused(api: TestClient) -> None:
    initialize(api)
    add(api, [said("user", "I live in Lisbon")])
    old = memory_id(api, "I live in Lisbon")

    def refused(status: int, code: str, messages: list[dict[str, Any]], **body: Any) -> str:
        answered = api.post(
            "/memory/add", json={"user_id": "customer_123", "messages": messages, **body}
        )
        message: str = seed_error(answered, status, code)["message"]
        return message

    porto = said("user", "I live in Porto")
    for fields in ({"supersedes": [old]}, {"valid_from": "2025-01-01"}):
        assert "with store_in_archival true" in refused(
            400, "archival_required", [{**porto, **fields}], store_in_archival=False
        )
    twice = [{**porto, "supersedes": [old]}, {**said("user", "And Braga"), "supersedes": [old]}]
    assert refused(400, "invalid_supersedes", twice) == (
        f"Archival memory {old} is named by two messages: a memory is replaced by one only "
        "(nothing was stored)."
    )
    many = [{**said("user", f"Fact {i}"), "supersedes": [f"id{i}a", f"id{i}b"]} for i in range(6)]
    assert refused(400, "invalid_supersedes", many).startswith(
        "One add replaces at most 10 memories, not 12"
    )
    refused(422, "validation_error", [{**porto, "valid_from": "the other day"}])
    refused(422, "validation_error", [{**porto, "supersedes": [""]}])
    refused(422, "validation_error", [{**porto, "supersedes": [f"id{i}" for i in range(11)]}])
    assert search(api)["results"] == ["I live in Lisbon"]  # nothing of these was stored


def test_search_and_context_refuse_a_moment_that_is_no_moment(api: TestClient) -> None:
    initialize(api)
    for path in ("/memory/search", "/memory/context"):
        answered = api.get(
            path, params={"user_id": "customer_123", "query": QUESTION, "as_of": "soon"}
        )
        seed_error(answered, 422, "validation_error")
    answered = api.get(
        "/memory/search",
        params={"user_id": "customer_123", "query": QUESTION, "include_history": "maybe"},
    )
    seed_error(answered, 422, "validation_error")
