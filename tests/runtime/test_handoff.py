"""handoff_to_user over HTTP with the scripted OpenAI: a turn that ends with a question for
the person, its conversation awaiting their answer, and the next message continuing it."""

import json

from fastapi.testclient import TestClient

from api.kit.clock import FrozenClock
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.runtime.conftest import events_of, messages, names, use_openai
from tests.runtime.test_chat import context_of, recent_lines

QUESTION = "Which city should I book the hotel in?"


def handoff(question: str = QUESTION) -> Reply:
    return Reply(tool_calls=[ToolCallScript("handoff_to_user", json.dumps({"question": question}))])


def tool_names(fake: FakeLLM, request: int = -1) -> list[str]:
    return [t["function"]["name"] for t in fake.requests[request].get("tools", [])]


def handing_off(client: TestClient, fake: FakeLLM) -> str:
    agent_id = use_openai(client, fake, "Concierge")
    turned_on = client.patch(f"/agents/{agent_id}", json={"handoff_to_user": True})
    assert turned_on.status_code == 200, turned_on.text
    assert turned_on.json()["handoff_to_user"] is True
    return agent_id


def test_the_tool_is_offered_only_to_an_agent_that_has_it(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    agent_id = use_openai(client, fake_openai, "Plain")
    assert client.get(f"/agents/{agent_id}").json()["handoff_to_user"] is False
    said = client.post("/chat", json={"agent_id": agent_id, "prompt": "Hi", "stream": False})
    assert said.status_code == 200, said.text
    assert "handoff_to_user" not in tool_names(fake_openai)
    # A model that calls it anyway is told it has no such tool; the turn goes on.
    fake_openai.replies += [handoff(), Reply(text="Fine.")]
    said = client.post("/chat", json={"agent_id": agent_id, "prompt": "Hi", "stream": False})
    assert said.json()["reason"] == "answer"
    assert said.json()["tool_calls"][0]["result"].startswith("There is no tool 'handoff_to_user'")

    on = handing_off(client, fake_openai)
    client.post("/chat", json={"agent_id": on, "prompt": "Hi", "stream": False})
    assert "handoff_to_user" in tool_names(fake_openai)


def test_a_handoff_ends_the_turn_with_the_question_and_the_next_message_continues(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    agent_id = handing_off(client, fake_openai)
    fake_openai.replies.append(handoff())
    found = events_of(
        client.post(
            "/chat",
            json={"agent_id": agent_id, "prompt": "Book me a hotel", "session_id": "trip"},
        )
    )
    assert names(found) == [
        "run.started",
        "tool.call",
        "tool.result",
        "context.used",
        "message",
        "run.completed",
    ]
    assert found[4].data["content"] == QUESTION
    assert found[-1].data["reason"] == "handoff"
    assert found[-1].data["steps"] == 1  # no further LLM call after the handoff
    conversation_id = found[0].data["conversation_id"]
    conversation = client.get(f"/conversations/{conversation_id}").json()
    assert conversation["awaiting_user"] is True
    stored = messages(client, conversation_id)
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "Book me a hotel"),
        ("assistant", ""),  # the call of handoff_to_user
        ("tool", "Handed off: your question is your answer, and the turn ends here."),
        ("assistant", QUESTION),
    ]

    # The person answers: the question is in the recent conversation, and the flag clears.
    clock.advance(1)
    fake_openai.replies.append(Reply(text="Booked in Porto."))
    answered = client.post(
        "/chat",
        json={"agent_id": agent_id, "prompt": "Porto", "session_id": "trip", "stream": False},
    )
    assert answered.status_code == 200, answered.text
    assert answered.json()["reason"] == "answer"
    assert recent_lines(context_of(fake_openai)) == [
        "user: Book me a hotel",
        f"assistant: {QUESTION}",
    ]
    assert client.get(f"/conversations/{conversation_id}").json()["awaiting_user"] is False


def test_without_a_stream_the_answer_is_the_question(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    agent_id = handing_off(client, fake_openai)
    # Text said with the call, and another tool called in the same step: both kept; the
    # question is still the answer.
    fake_openai.replies.append(
        Reply(
            text="Let me ask.",
            tool_calls=[
                ToolCallScript("core_memory_append", '{"block": "human", "content": "Travels"}'),
                ToolCallScript("handoff_to_user", json.dumps({"question": QUESTION})),
            ],
        )
    )
    said = client.post("/chat", json={"agent_id": agent_id, "prompt": "Hotel?", "stream": False})
    assert said.status_code == 200, said.text
    body = said.json()
    assert (body["output"], body["reason"], body["steps"]) == (QUESTION, "handoff", 1)
    assert [c["name"] for c in body["tool_calls"]] == ["core_memory_append", "handoff_to_user"]
    assert client.get(f"/agents/{agent_id}/memory/blocks/human").json()["lines"] == ["Travels"]


def test_a_handoff_without_a_question_is_refused_to_the_model(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    agent_id = handing_off(client, fake_openai)
    fake_openai.replies += [
        Reply(tool_calls=[ToolCallScript("handoff_to_user", '{"question": "  "}')]),
        Reply(text="Never mind."),
    ]
    said = client.post("/chat", json={"agent_id": agent_id, "prompt": "Hi", "stream": False})
    body = said.json()
    assert (body["output"], body["reason"]) == ("Never mind.", "answer")
    assert "'question' is required" in body["tool_calls"][0]["result"]
    conversation = client.get(f"/conversations/{body['conversation_id']}").json()
    assert conversation["awaiting_user"] is False
