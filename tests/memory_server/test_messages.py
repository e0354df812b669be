"""POST /messages, GET /messages/{agent_name} and POST /messages/search: stored with their
vectors in a session of the agent, listed newest first across its conversations, found by
meaning with their similarity; part of the conversations, the recent turns and the expiry
of everything else."""

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.conversations.messages.models import Message, MessageRecall
from api.conversations.messages.service import copy_item
from api.conversations.repository import ConversationRepository
from api.kit.clock import FrozenClock
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Table
from tests.memory_server.conftest import local_settings, new_agent, post_message, refused, serve
from tests.runtime.conftest import running

DAY = 86_400


def test_a_message_is_stored_with_the_seed_fields(api: TestClient, clock: FrozenClock) -> None:
    agent = new_agent(api)
    for role in ("user", "assistant", "system"):
        message = post_message(api, clock, f"A {role} message", role=role)
        assert message["role"] == role
        assert message["agent_id"] == agent["id"]
        assert message["content"] == f"A {role} message"
        assert message["metadata"] is None
        assert message["similarity"] is None
        assert all(message[field] for field in ("id", "created_at", "conversation_id"))
    kept = post_message(api, clock, "With metadata", metadata={"model": "gpt-4", "tokens": 12})
    assert kept["metadata"] == {"model": "gpt-4", "tokens": 12}
    listed = api.get("/messages/my_agent").json()
    assert listed[0]["metadata"] == {"model": "gpt-4", "tokens": 12}
    assert [m["metadata"] for m in listed[1:]] == [None, None, None]


def test_an_unknown_agent_is_404(api: TestClient) -> None:
    body = {"agent_name": "nobody", "role": "user", "content": "hi"}
    refused(api.post("/messages", json=body), 404, "agent_not_found")
    refused(api.get("/messages/nobody"), 404, "agent_not_found")
    search = {"agent_name": "nobody", "query": "hi"}
    refused(api.post("/messages/search", json=search), 404, "agent_not_found")


@pytest.mark.parametrize(
    "changes",
    [
        {"role": "tool"},
        {"role": "User"},
        {"role": None},
        {"content": ""},
        {"content": "   \n "},
        {"content": 123},
        {"content": "x" * 50_001},
        {"agent_name": ""},
        {"agent_name": 7},
        {"metadata": ["a"]},
        {"metadata": {"": "empty key"}},
        {"session_id": ""},
        {"session_id": "bad\nid"},
        {"session_id": "\u00e9" * 257},
        {"extra": "field"},
    ],
)
def test_bad_message_bodies_are_422(api: TestClient, changes: dict[str, Any]) -> None:
    new_agent(api)
    body = {"agent_name": "my_agent", "role": "user", "content": "hi", **changes}
    refused(api.post("/messages", json=body), 422, "validation_error")
    missing = {"agent_name": "my_agent", "role": "user"}
    refused(api.post("/messages", json=missing), 422, "validation_error")
    assert api.get("/messages/my_agent").json() == []


def test_messages_are_listed_newest_first_across_conversations(
    api: TestClient, clock: FrozenClock
) -> None:
    agent = new_agent(api)
    post_message(api, clock, "first, default session")
    post_message(api, clock, "second, another session", session_id="work")
    clock.advance(1)
    turn = api.post(
        "/chat",
        json={"agent_id": agent["id"], "prompt": "third, a chat turn", "stream": False},
    )
    assert turn.status_code == 200, turn.text
    post_message(api, clock, "last, default session", role="assistant")

    listed = api.get("/messages/my_agent").json()
    contents = [m["content"] for m in listed]
    assert contents[0] == "last, default session"
    assert contents[-2:] == ["second, another session", "first, default session"]
    assert "third, a chat turn" in contents  # and the agent's answer to it, before it
    assert contents.index(turn.json()["output"]) < contents.index("third, a chat turn")
    times = [datetime.fromisoformat(m["created_at"]) for m in listed]
    assert times == sorted(times, reverse=True)

    two = api.get("/messages/my_agent", params={"limit": 2}).json()
    assert [m["content"] for m in two] == contents[:2]
    for limit in (0, 1001, "x"):
        refused(api.get("/messages/my_agent", params={"limit": limit}), 422, "validation_error")


def test_messages_live_in_conversations(api: TestClient, clock: FrozenClock) -> None:
    agent = new_agent(api)
    default = post_message(api, clock, "In the default session", metadata={"k": [1]})
    again = post_message(api, clock, "Still the default session", role="assistant")
    work = post_message(api, clock, "At work", session_id="work")
    assert default["conversation_id"] == again["conversation_id"] != work["conversation_id"]

    listed = api.get("/conversations", params={"agent_id": agent["id"]}).json()["conversations"]
    assert {c["id"] for c in listed} == {default["conversation_id"], work["conversation_id"]}
    history = api.get(f"/conversations/{default['conversation_id']}/messages").json()
    assert [(m["role"], m["content"]) for m in history["messages"]] == [
        ("user", "In the default session"),
        ("assistant", "Still the default session"),
    ]
    assert [m["metadata"] for m in history["messages"]] == [{"k": [1]}, None]


def test_a_deleted_sessions_conversation_is_opened_again(
    api: TestClient, clock: FrozenClock
) -> None:
    new_agent(api)
    first = post_message(api, clock, "Before", session_id="s1")
    deleted = api.delete(f"/conversations/{first['conversation_id']}")
    assert deleted.status_code == 204
    second = post_message(api, clock, "After", session_id="s1")
    assert second["conversation_id"] != first["conversation_id"]
    assert [m["content"] for m in api.get("/messages/my_agent").json()] == ["After"]


def test_posted_messages_feed_the_sessions_recent_turns(
    api: TestClient, clock: FrozenClock
) -> None:
    agent = new_agent(api)

    def said(prompt: str, **body: Any) -> str:
        clock.advance(1)
        answer = api.post(
            "/chat", json={"agent_id": agent["id"], "prompt": prompt, "stream": False, **body}
        )
        assert answer.status_code == 200, answer.text
        output: str = answer.json()["output"]
        return output

    post_message(api, clock, "I prefer tea", session_id="cafe")
    post_message(api, clock, "Noted: tea.", role="assistant", session_id="cafe")
    assert said("What do I prefer?", session_id="cafe").startswith("You prefer tea.")
    assert said("What do I prefer?", session_id="elsewhere").startswith("I don't know that yet.")
    # Without a session id, both sides use the agent's default session.
    post_message(api, clock, "I prefer coffee")
    assert said("What do I prefer?").startswith("You prefer coffee.")


def test_messages_expire_with_the_agents_events(api: TestClient, clock: FrozenClock) -> None:
    new_agent(api, event_expiry_days=1)
    new_agent(api, "keeper", event_expiry_days=0)
    post_message(api, clock, "I love pizza")
    post_message(api, clock, "I love pizza", agent="keeper")
    search = {"agent_name": "my_agent", "query": "pizza"}
    assert len(api.post("/messages/search", json=search).json()) == 1

    clock.advance(DAY + 5)
    assert api.get("/messages/my_agent").json() == []
    assert api.post("/messages/search", json=search).json() == []
    assert [m["content"] for m in api.get("/messages/keeper").json()] == ["I love pizza"]


def test_search_finds_by_meaning_best_first_with_similarity(
    api: TestClient, clock: FrozenClock
) -> None:
    new_agent(api)
    post_message(api, clock, "I love pizza with extra cheese", metadata={"source": "chat"})
    post_message(api, clock, "The meeting moved to Thursday afternoon")
    post_message(api, clock, "My sister lives in Lisbon")
    found = api.post(
        "/messages/search", json={"agent_name": "my_agent", "query": "What food do I like?"}
    )
    assert found.status_code == 200, found.text
    results = found.json()
    assert results[0]["content"] == "I love pizza with extra cheese"
    assert results[0]["metadata"] == {"source": "chat"}
    assert all(isinstance(r["similarity"], float) for r in results)
    assert 0 < results[0]["similarity"] <= 1
    assert results[0]["similarity"] == max(r["similarity"] for r in results)


def test_search_limits(api: TestClient, clock: FrozenClock) -> None:
    new_agent(api)
    for i in range(25):
        post_message(api, clock, f"Coffee note number {i}")
    url = "/messages/search"
    assert len(api.post(url, json={"agent_name": "my_agent", "query": "coffee"}).json()) == 5
    two = api.post(url, json={"agent_name": "my_agent", "query": "coffee", "limit": 2}).json()
    assert len(two) == 2
    twenty = api.post(url, json={"agent_name": "my_agent", "query": "coffee", "limit": 20})
    assert len(twenty.json()) == 20
    for limit in (21, 0, -1, "5", 2.5, True):
        with_limit = {"agent_name": "my_agent", "query": "coffee", "limit": limit}
        refused(api.post(url, json=with_limit), 422, "validation_error")
    for body in (
        {"agent_name": "my_agent"},
        {"agent_name": "my_agent", "query": ""},
        {"agent_name": "my_agent", "query": "x" * 2001},
        {"agent_name": "my_agent", "query": "coffee", "mode": "semantic"},
        {"query": "coffee"},
    ):
        refused(api.post(url, json=body), 422, "validation_error")


@pytest.fixture
def configured(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[TestClient]:
    """The app with seed 002's search settings given by their seed names."""
    monkeypatch.setenv("MEMORY_DEFAULT_SEARCH_LIMIT", "3")
    monkeypatch.setenv("MEMORY_MAX_SEARCH_LIMIT", "4")
    yield from serve("local", request, tmp_path, clock)


def test_search_limits_follow_their_settings(configured: TestClient, clock: FrozenClock) -> None:
    new_agent(configured)
    for i in range(6):
        post_message(configured, clock, f"Tea note {i}")
    url = "/messages/search"
    assert len(configured.post(url, json={"agent_name": "my_agent", "query": "tea"}).json()) == 3
    four = configured.post(url, json={"agent_name": "my_agent", "query": "tea", "limit": 4})
    assert len(four.json()) == 4
    five = configured.post(url, json={"agent_name": "my_agent", "query": "tea", "limit": 5})
    refused(five, 422, "validation_error")
    assert "less than or equal to 4" in five.json()["message"]


def test_a_session_being_deleted_refuses_new_messages(tmp_path: Path, clock: FrozenClock) -> None:
    table = SqliteTable(tmp_path / "own.db", "seed002", load_definition(), clock=clock)
    with running(local_settings(tmp_path), clock, table) as client:
        new_agent(client)
        first = post_message(client, clock, "Before", session_id="s1")
        portal = client.portal  # the app's event loop
        assert portal is not None
        repo = ConversationRepository(table)
        conversation = portal.call(repo.get, "local@localhost", first["conversation_id"])
        assert conversation is not None
        # A deletion has begun (and not yet removed the session's lookup).
        portal.call(repo.mark_deleting, conversation)
        body = {"agent_name": "my_agent", "role": "user", "content": "During", "session_id": "s1"}
        refused(client.post("/messages", json=body), 409, "session_closing")
        assert [m["content"] for m in client.get("/messages/my_agent").json()] == ["Before"]


async def test_message_metadata_round_trips_on_every_engine(table: Table) -> None:
    message = Message(
        conversation_id="c1",
        message_id="m1",
        role="user",
        content="hi",
        metadata={"tokens": 12, "cost": 0.25, "tags": ["a", None, True], "nested": {"x": 1.5}},
        created_at=datetime(2025, 1, 2, tzinfo=UTC),
    )
    await table.put(message.to_dynamo_item())
    await table.put(copy_item("a1", message, {}))
    stored = await table.get(message.key())
    assert stored is not None
    assert Message.from_dynamo_item(stored).metadata == message.metadata
    recall = await table.get(MessageRecall.from_dynamo_item(copy_item("a1", message, {})).key())
    assert recall is not None
    assert MessageRecall.from_dynamo_item(recall).metadata == message.metadata


# --- POST /messages/batch (ours: the learning() client stores an exchange with one request)


def test_a_batch_is_stored_in_order_as_messages_are(api: TestClient, clock: FrozenClock) -> None:
    agent = new_agent(api)
    body = {
        "agent_name": "my_agent",
        "messages": [
            {"role": "user", "content": "My bike is red.", "metadata": {"source": "learning"}},
            {"role": "assistant", "content": "A red bike, noted."},
        ],
    }
    stored = api.post("/messages/batch", json=body)
    assert stored.status_code == 201, stored.text
    question, answer = stored.json()
    assert (question["role"], question["content"]) == ("user", "My bike is red.")
    assert question["metadata"] == {"source": "learning"}
    assert (answer["role"], answer["content"], answer["metadata"]) == (
        "assistant",
        "A red bike, noted.",
        None,
    )
    assert {question["agent_id"], answer["agent_id"]} == {agent["id"]}
    assert question["conversation_id"] == answer["conversation_id"]
    said_at = [datetime.fromisoformat(m["created_at"]) for m in (question, answer)]
    assert said_at[0] < said_at[1]
    # Listed, searchable and in the session's conversation like any posted message.
    listed = api.get("/messages/my_agent").json()
    assert [m["id"] for m in listed] == [answer["id"], question["id"]]
    single = post_message(api, clock, "And one more.")
    assert single["conversation_id"] == question["conversation_id"]
    found = api.post("/messages/search", json={"agent_name": "my_agent", "query": "red bike"})
    assert question["id"] in [m["id"] for m in found.json()]
    context = api.post("/context/my_agent", json={"query": "What colour is my bike?"}).json()
    assert "My bike is red." in [m["content"] for m in context["relevant_messages"]]


@pytest.mark.parametrize(
    "changes",
    [
        {"messages": []},
        {"messages": [{"role": "user", "content": f"m{n}"} for n in range(11)]},
        {"messages": [{"role": "user", "content": "fine"}, {"role": "tool", "content": "x"}]},
        {"messages": [{"role": "user", "content": "fine"}, {"role": "user", "content": " "}]},
        {"messages": [{"role": "user", "content": "hi", "agent_name": "my_agent"}]},
        {"messages": "hi"},
        {"agent_name": ""},
        {"session_id": "bad\nid"},
        {"extra": "field"},
    ],
)
def test_a_bad_batch_is_422_and_stores_nothing(api: TestClient, changes: dict[str, Any]) -> None:
    new_agent(api)
    body = {"agent_name": "my_agent", "messages": [{"role": "user", "content": "hi"}], **changes}
    refused(api.post("/messages/batch", json=body), 422, "validation_error")
    assert api.get("/messages/my_agent").json() == []


def test_a_batch_for_an_unknown_agent_is_404(api: TestClient) -> None:
    body = {"agent_name": "nobody", "messages": [{"role": "user", "content": "hi"}]}
    refused(api.post("/messages/batch", json=body), 404, "agent_not_found")
