"""POST /context/{agent_name}: the memory blocks and the relevant messages a prompt needs."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.kit.clock import FrozenClock
from tests.memory_server.conftest import new_agent, post_message, refused, serve


def test_context_has_blocks_and_relevant_messages(api: TestClient, clock: FrozenClock) -> None:
    new_agent(api)
    api.post(
        "/memory-blocks", json={"agent_name": "my_agent", "label": "human", "value": "Name: Alice"}
    )
    post_message(api, clock, "My name is Alice and I live in Boston", metadata={"n": 1})
    post_message(api, clock, "Nice to meet you, Alice!", role="assistant")
    post_message(api, clock, "The weather is awful today")

    answered = api.post(
        "/context/my_agent", json={"agent_name": "my_agent", "query": "Where do I live?"}
    )
    assert answered.status_code == 200, answered.text
    context = answered.json()
    # Blocks that hold something (the empty persona block adds nothing to a prompt).
    assert [(b["label"], b["value"]) for b in context["memory_blocks"]] == [
        ("human", "Name: Alice")
    ]
    assert {"id", "agent_id", "created_at", "updated_at"} <= set(context["memory_blocks"][0])
    best = context["relevant_messages"][0]
    assert best["content"] == "My name is Alice and I live in Boston"
    assert best["metadata"] == {"n": 1}
    assert best["role"] == "user"
    assert all(isinstance(m["similarity"], float) for m in context["relevant_messages"])

    # The path names the agent; the body's agent_name may be left out.
    same = api.post("/context/my_agent", json={"query": "Where do I live?"}).json()
    assert same == context

    # Metadata with numbers reads back as the listing (read from the table) gives it,
    # whether the search found the message in an index loaded from the table or in one
    # that took the message as it was written (the index is loaded by now).
    post_message(api, clock, "I moved to Lisbon", metadata={"x": 2.0, "y": [0.5, 3]})
    found = api.post("/context/my_agent", json={"query": "Where did I move?"}).json()
    hit = next(m for m in found["relevant_messages"] if m["content"] == "I moved to Lisbon")
    listed = api.get("/messages/my_agent").json()
    stored = next(m for m in listed if m["content"] == "I moved to Lisbon")
    assert (
        json.dumps(hit["metadata"]) == json.dumps(stored["metadata"]) == '{"x": 2, "y": [0.5, 3]}'
    )


def test_empty_metadata_reads_back_empty_as_the_listing_gives_it(
    api: TestClient, clock: FrozenClock
) -> None:
    # One message found in an index loaded from the table, one in an index that took it
    # as it was written: both keep {} (not null), as GET /messages does.
    new_agent(api)
    post_message(api, clock, "My name is Alice and I live in Boston", metadata={})
    first = api.post("/context/my_agent", json={"query": "Where do I live?"}).json()
    post_message(api, clock, "I moved to Lisbon", metadata={})
    then = api.post("/context/my_agent", json={"query": "Where did I move?"}).json()
    listed = {m["content"]: m["metadata"] for m in api.get("/messages/my_agent").json()}
    assert listed == {"My name is Alice and I live in Boston": {}, "I moved to Lisbon": {}}
    found = {m["content"]: m["metadata"] for m in first["relevant_messages"]}
    found.update({m["content"]: m["metadata"] for m in then["relevant_messages"]})
    assert found == listed


def test_a_blank_query_gives_blocks_only(api: TestClient, clock: FrozenClock) -> None:
    new_agent(api, persona="I am a helpful assistant.")
    post_message(api, clock, "Something said")
    context = api.post("/context/my_agent", json={"query": "  "}).json()
    assert [b["label"] for b in context["memory_blocks"]] == ["persona"]
    assert context["relevant_messages"] == []


def test_context_errors(api: TestClient) -> None:
    new_agent(api)
    refused(api.post("/context/nobody", json={"query": "x"}), 404, "agent_not_found")
    mismatch = api.post("/context/my_agent", json={"agent_name": "other", "query": "x"})
    refused(mismatch, 400, "agent_name_mismatch")
    for body in ({}, {"query": 5}, {"query": "x", "limit": 3}, {"query": "x" * 32_001}):
        refused(api.post("/context/my_agent", json=body), 422, "validation_error")


def test_context_messages_are_at_most_the_default_ten(api: TestClient, clock: FrozenClock) -> None:
    new_agent(api)
    for i in range(14):
        post_message(api, clock, f"Pizza fact {i}")
    context = api.post("/context/my_agent", json={"query": "pizza"}).json()
    assert len(context["relevant_messages"]) == 10


@pytest.fixture
def three(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[TestClient]:
    monkeypatch.setenv("MEMORY_MAX_CONTEXT_MESSAGES", "3")
    yield from serve("local", request, tmp_path, clock)


def test_context_messages_follow_their_setting(three: TestClient, clock: FrozenClock) -> None:
    new_agent(three)
    for i in range(6):
        post_message(three, clock, f"Pizza fact {i}")
    context = three.post("/context/my_agent", json={"query": "pizza"}).json()
    assert len(context["relevant_messages"]) == 3


def test_zero_context_messages_gives_blocks_only(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORY_MAX_CONTEXT_MESSAGES", "0")
    for client in serve("local", request, tmp_path, clock):
        new_agent(client)
        post_message(client, clock, "Pizza")
        assert client.post("/context/my_agent", json={"query": "pizza"}).json() == {
            "memory_blocks": [],
            "relevant_messages": [],
        }


def test_a_name_follows_its_agent_through_renames_and_deletions(
    api: TestClient, clock: FrozenClock
) -> None:
    """The server remembers which agent a name found last (one read fewer per call): a
    renamed or deleted agent is never answered for the name again."""

    def human(name: str) -> list[str]:
        answered = api.post(f"/context/{name}", json={"query": "who?"})
        assert answered.status_code == 200, answered.text
        return [b["value"] for b in answered.json()["memory_blocks"]]

    def remember(name: str, value: str) -> None:
        block = {"agent_name": name, "label": "human", "value": value}
        assert api.post("/memory-blocks", json=block).status_code == 201

    first = new_agent(api, "helper")
    remember("helper", "First helper")
    assert human("helper") == ["First helper"]
    renamed = api.patch(f"/agents/{first['id']}", json={"name": "old-helper"})
    assert renamed.status_code == 200, renamed.text
    refused(api.post("/context/helper", json={"query": "who?"}), 404, "agent_not_found")
    new_agent(api, "helper")
    remember("helper", "Second helper")
    assert human("helper") == ["Second helper"]
    assert human("old-helper") == ["First helper"]
    # A message posted by name goes to the agent that bears it now.
    post_message(api, clock, "For the second one", agent="helper")
    assert [m["content"] for m in api.get("/messages/helper").json()] == ["For the second one"]
    assert api.get("/messages/old-helper").json() == []

    second = api.get("/agents/helper").json()
    assert api.delete(f"/agents/{second['id']}").status_code == 204
    refused(api.post("/context/helper", json={"query": "who?"}), 404, "agent_not_found")
    body = {"agent_name": "helper", "role": "user", "content": "Anyone?"}
    refused(api.post("/messages", json=body), 404, "agent_not_found")


def test_a_name_holding_a_slash_reaches_context_and_the_listing(
    api: TestClient, clock: FrozenClock
) -> None:
    # learning() quotes the name whole ("team%2Fbot"); the server decodes it to a "/".
    new_agent(api, "team/bot")
    post_message(api, clock, "My name is Alice and I live in Boston", agent="team/bot")
    context = api.post("/context/team%2Fbot", json={"query": "Where do I live?"})
    assert context.status_code == 200, context.text
    assert [m["content"] for m in context.json()["relevant_messages"]] == [
        "My name is Alice and I live in Boston"
    ]
    listed = api.get("/messages/team%2Fbot")
    assert listed.status_code == 200, listed.text
    assert [m["content"] for m in listed.json()] == ["My name is Alice and I live in Boston"]
    # Another agent's name that only starts the same is no match.
    refused(api.post("/context/team", json={"query": "Where do I live?"}), 404, "agent_not_found")
