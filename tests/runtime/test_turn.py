"""One turn, end to end over HTTP: seed 000's Alice example with the offline model and with
the OpenAI adapter against the fake OpenAI, every message stored in order, and the memory
the tools wrote in the next turn's system prompt."""

import json
from datetime import datetime

from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.tools.native import NATIVE_MEMORY_TOOLS
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.runtime.conftest import (
    append,
    lines_of,
    messages,
    names,
    new_agent,
    new_conversation,
    parse_sse,
    send,
    use_openai,
)

ALICE = "My name is Alice and I work at Google"
FIRST_REPLY = 'Appended to [human] at line 1: "Name: Alice" (2/5000 words)'
SECOND_REPLY = 'Appended to [human] at line 2: "Works at: Google" (5/5000 words)'


def test_alice_with_the_offline_model(client: TestClient, clock: FrozenClock) -> None:
    agent_id = new_agent(client)
    conversation_id = new_conversation(client, agent_id)

    found = send(client, conversation_id, ALICE)

    assert names(found)[0] == "run.started"
    assert names(found)[-2:] == ["message", "run.completed"]
    calls = [e.data for e in found if e.name == "tool.call"]
    results = [e.data for e in found if e.name == "tool.result"]
    assert [(c["name"], c["arguments"]) for c in calls] == [
        ("core_memory_append", {"block": "human", "content": "Name: Alice"}),
        ("core_memory_append", {"block": "human", "content": "Works at: Google"}),
    ]
    assert [r["content"] for r in results] == [FIRST_REPLY, SECOND_REPLY]
    assert [r["call_id"] for r in results] == [c["call_id"] for c in calls]
    # Each call comes before its result, and the answer after both.
    order = [e.name for e in found if e.name in ("tool.call", "tool.result", "message")]
    assert order == ["tool.call", "tool.result", "tool.call", "tool.result", "message"]
    text = "".join(e.data["text"] for e in found if e.name == "text.delta")
    final = found[-2].data
    assert final["content"] == text
    assert text.startswith("Nice to meet you, Alice!")
    assert found[-1].data["steps"] == 3
    assert {e.data["run_id"] for e in found} == {found[0].data["run_id"]}
    assert [int(e.id or 0) for e in found] == list(range(1, len(found) + 1))

    assert lines_of(client, agent_id) == ["Name: Alice", "Works at: Google"]
    clock.advance(1)
    answer = send(client, conversation_id, "What's my name and where do I work?")
    assert answer[-2].data["content"].startswith("Your name is Alice.")


def test_alice_with_the_openai_adapter(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    agent_id = use_openai(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)
    fake_openai.replies += [
        Reply(tool_calls=[append("Name: Alice")]),
        Reply(tool_calls=[append("Works at: Google")]),
        Reply(text="Nice to meet you, Alice! I'll remember that you work at Google."),
    ]

    found = send(client, conversation_id, ALICE)

    assert [e.data["content"] for e in found if e.name == "tool.result"] == [
        FIRST_REPLY,
        SECOND_REPLY,
    ]
    assert found[-2].data["content"] == (
        "Nice to meet you, Alice! I'll remember that you work at Google."
    )
    assert lines_of(client, agent_id) == ["Name: Alice", "Works at: Google"]
    # The model was offered the seven tools and got each result back under its call id.
    first, second, third = fake_openai.requests
    assert [t["function"]["name"] for t in first["tools"]] == list(NATIVE_MEMORY_TOOLS)
    call_id = second["messages"][2]["tool_calls"][0]["id"]
    assert second["messages"][3] == {
        "role": "tool",
        "tool_call_id": call_id,
        "content": FIRST_REPLY,
    }
    assert third["messages"][-1]["content"] == SECOND_REPLY

    clock.advance(1)
    fake_openai.replies.append(Reply(text="You are Alice, and you work at Google."))
    send(client, conversation_id, "Who am I?")
    system = fake_openai.requests[-1]["messages"][0]
    assert system["role"] == "system"
    assert "<core_memory>\n[Human" in system["content"]
    assert "1: Name: Alice\n2: Works at: Google\n" in system["content"]
    # And the conversation so far, in seed 001's form.
    assert (
        f"Recent conversation:\nuser: {ALICE}\nassistant: Nice to meet you" in (system["content"])
    )


def test_every_message_is_stored_in_order(client: TestClient, fake_openai: FakeLLM) -> None:
    agent_id = use_openai(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)
    fake_openai.replies += [
        Reply(text="Let me note that.", tool_calls=[append("Name: Alice")]),
        Reply(text="Done."),
    ]
    send(client, conversation_id, "My name is Alice")

    stored = messages(client, conversation_id)
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "My name is Alice"),
        ("assistant", "Let me note that."),
        ("tool", FIRST_REPLY),
        ("assistant", "Done."),
    ]
    call = stored[1]["tool_calls"][0]
    assert call["name"] == "core_memory_append"
    assert call["arguments"] == {"block": "human", "content": "Name: Alice"}
    assert stored[2]["tool_call_id"] == call["id"]
    assert {m["actor_id"] for m in stored} == {"local@localhost"}
    assert not any(m["interrupted"] for m in stored)


def test_the_steps_are_bounded_and_the_last_one_must_answer(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    settings_steps = Settings().max_turn_steps
    agent_id = use_openai(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)
    # A model that never stops calling tools.
    fake_openai.replies += [
        Reply(tool_calls=[ToolCallScript("core_memory_list_blocks", "{}")]) for _ in range(20)
    ]
    found = send(client, conversation_id, "Loop forever")

    assert len(fake_openai.requests) == settings_steps
    assert all("tools" in r for r in fake_openai.requests[:-1])
    assert "tools" not in fake_openai.requests[-1]  # the last step offers none
    assert found[-1].name == "run.completed"
    assert found[-1].data["steps"] == settings_steps
    # Tool calls in the last step, where none were offered, are ignored: not run, not shown.
    assert len([e for e in found if e.name == "tool.call"]) == settings_steps - 1
    assert len([e for e in found if e.name == "tool.result"]) == settings_steps - 1
    assert messages(client, conversation_id)[-1]["tool_calls"] == []


def test_json_instead_of_a_stream(client: TestClient, clock: FrozenClock) -> None:
    agent_id = new_agent(client)
    conversation_id = new_conversation(client, agent_id)
    url = f"/conversations/{conversation_id}/messages"

    body = client.post(url, json={"content": ALICE, "stream": False}).json()
    assert body["output"].startswith("Nice to meet you, Alice!")
    assert [(t["name"], t["result"]) for t in body["tool_calls"]] == [
        ("core_memory_append", FIRST_REPLY),
        ("core_memory_append", SECOND_REPLY),
    ]
    assert body["conversation_id"] == conversation_id
    assert body["steps"] == 3

    clock.advance(1)
    by_header = client.post(
        url, json={"content": "Who am I?"}, headers={"accept": "application/json"}
    )
    assert by_header.headers["content-type"] == "application/json"
    assert by_header.json()["output"].startswith("Your name is Alice.")
    streamed = client.post(
        url, json={"content": "Who am I?"}, headers={"accept": "text/event-stream"}
    )
    assert parse_sse(streamed.text)[0][0].name == "run.started"


def test_bad_turn_requests_are_refused_and_store_nothing(client: TestClient) -> None:
    agent_id = new_agent(client)
    conversation_id = new_conversation(client, agent_id)
    url = f"/conversations/{conversation_id}/messages"

    empty = client.post(url, json={"content": ""})
    assert empty.status_code == 422
    assert empty.json()["code"] == "validation_error"
    control = client.post(url, json={"content": "hi", "actor_id": "a\nb"})
    assert control.status_code == 422
    unknown = client.post("/conversations/nope/messages", json={"content": "hi"})
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "conversation_not_found"
    assert messages(client, conversation_id) == []


def test_a_provider_not_configured_is_a_plain_error_before_any_stream(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    agent_id = use_openai(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)
    assert client.delete("/settings/providers/openai").status_code == 204

    refused = client.post(f"/conversations/{conversation_id}/messages", json={"content": "hi"})

    assert refused.status_code == 404
    assert refused.json()["code"] == "provider_not_configured"
    assert messages(client, conversation_id) == []


def test_messages_keep_their_order_on_a_clock_that_does_not_move(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    agent_id = use_openai(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)
    facts = [f"Fact: {i}" for i in range(6)]
    fake_openai.replies += [Reply(tool_calls=[append(fact)]) for fact in facts]
    fake_openai.replies += [Reply(text="Six facts."), Reply(text="Still here.")]

    send(client, conversation_id, "Remember six facts")  # 14 messages at one clock reading
    send(client, conversation_id, "And?")  # and a second turn at the same reading

    stored = messages(client, conversation_id)
    assert [m["role"] for m in stored] == ["user"] + ["assistant", "tool"] * 6 + [
        "assistant",
        "user",
        "assistant",
    ]
    assert [m["content"] for m in stored if m["role"] == "tool"] == [
        f'Appended to [human] at line {i + 1}: "Fact: {i}" ({2 * (i + 1)}/5000 words)'
        for i in range(6)
    ]
    assert stored[-2]["content"] == "And?"
    times = [datetime.fromisoformat(m["created_at"]) for m in stored]
    assert times == sorted(times)
    assert len(set(times)) == len(times)


def test_a_models_bad_tool_call_is_a_reply_it_can_correct(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    """Arguments that are not JSON, or too large for one stored message, once failed the
    whole turn (502, 413); the model is now told, and the turn goes on."""
    agent_id = use_openai(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)
    huge = json.dumps({"block": "human", "content": "x" * 600_000})
    fake_openai.replies += [
        Reply(tool_calls=[ToolCallScript("core_memory_append", '{"block": "hum')]),
        Reply(tool_calls=[ToolCallScript("core_memory_append", huge)]),
        Reply(tool_calls=[append("Name: Alice")]),
        Reply(text="Noted."),
    ]

    found = send(client, conversation_id, ALICE)

    results = [e.data["content"] for e in found if e.name == "tool.result"]
    assert results[0] == (
        "Invalid arguments for core_memory_append: the arguments are not valid JSON. (no change)"
    )
    assert results[1].startswith(
        "Invalid arguments for core_memory_append: the arguments are too large"
    )
    assert results[2] == FIRST_REPLY
    assert [e.name for e in found][-1] == "run.completed"
    assert lines_of(client, agent_id) == ["Name: Alice"]
    stored = messages(client, conversation_id)
    calls = [c for m in stored for c in m["tool_calls"]]
    assert [c.get("problem", "")[:30] for c in calls[:2]] == [
        "the arguments are not valid JS",
        "the arguments are too large (6",
    ]
    assert all(len(json.dumps(c)) < 1000 for c in calls[:2])  # nothing of 600 KB was kept
