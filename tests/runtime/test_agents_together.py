"""Seed 001's multi-agent example built through the API (docs/agents-together.md): an
orchestrator whose tools are two specialists and handoff_to_user, each agent with the
hooks injected by the runtime. The seed's continuity and isolation scenarios hold for the
orchestrator and for each specialist (what reached each model's context, on the scripted
OpenAI)."""

import json
from typing import Any

import httpx2
from fastapi.testclient import TestClient

from api.kit.clock import FrozenClock
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.runtime.test_chat import context_of, recent_lines
from tests.runtime.test_specialists import agent, ask

ROUTE = "Route queries to specialists: weather questions to Weather, food to Food."


def chat(
    client: httpx2.Client, clock: FrozenClock, agent_id: str, prompt: str, session: str
) -> dict[str, Any]:
    clock.advance(1)
    body = {"agent_id": agent_id, "prompt": prompt, "session_id": session, "stream": False}
    answered = client.post("/chat", json=body)
    assert answered.status_code == 200, answered.text
    found: dict[str, Any] = answered.json()
    return found


def test_seed_001_multi_agent_example(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    # create_orchestrator(): system_prompt, tools=[specialist1, specialist2, handoff_to_user]
    weather = agent(client, fake_openai, "Weather", persona="Answers weather questions.")
    food = agent(client, fake_openai, "Food", persona="Knows what the user likes to eat.")
    orchestrator = agent(
        client,
        fake_openai,
        "Orchestrator",
        persona=ROUTE,
        specialists=[weather, food],
        handoff_to_user=True,
    )
    shown = client.get(f"/agents/{orchestrator}").json()
    assert (shown["specialists"], shown["handoff_to_user"]) == ([weather, food], True)

    def specialist_context(before: int) -> list[str]:
        """The recent conversation the specialist's model saw (the request after the
        orchestrator's first)."""
        return recent_lines(context_of(fake_openai, before + 1))

    # Continuity (session-789): the orchestrator routes; each agent keeps its own thread.
    fake_openai.replies += [
        ask("ask_food", "Alice loves pizza."),
        Reply(text="Noted: pizza."),
        Reply(text="Nice to meet you, Alice!"),
    ]
    first = chat(client, clock, orchestrator, "My name is Alice and I love pizza", "session-789")
    assert [t["name"] for t in first["tool_calls"]] == ["ask_food"]
    tools = [t["function"]["name"] for t in fake_openai.requests[-3]["tools"]]
    assert tools[-3:] == ["handoff_to_user", "ask_weather", "ask_food"]
    assert ROUTE in context_of(fake_openai, -3)

    fake_openai.replies.append(Reply(text="Your name is Alice."))
    chat(client, clock, orchestrator, "What's my name?", "session-789")
    assert recent_lines(context_of(fake_openai)) == [
        "user: My name is Alice and I love pizza",
        "assistant: Nice to meet you, Alice!",
    ]

    fake_openai.replies += [
        ask("ask_food", "What food does Alice like?"),
        Reply(text="Pizza."),
        Reply(text="You love pizza."),
    ]
    before = len(fake_openai.requests)
    third = chat(client, clock, orchestrator, "What food do I like?", "session-789")
    assert third["output"] == "You love pizza."
    assert specialist_context(before) == ["user: Alice loves pizza.", "assistant: Noted: pizza."]

    fake_openai.replies += [
        ask("ask_weather", "What's the weather in SF?"),
        Reply(text="65°F and sunny."),
        Reply(text="The weather in San Francisco is 65°F and sunny."),
    ]
    before = len(fake_openai.requests)
    chat(client, clock, orchestrator, "What's the weather in SF?", "session-789")
    assert specialist_context(before) == []  # Weather was never asked before

    # handoff_to_user: the turn ends with a question; the answer continues it.
    fake_openai.replies.append(
        Reply(
            tool_calls=[
                ToolCallScript("handoff_to_user", json.dumps({"question": "For how many people?"}))
            ]
        )
    )
    asked = chat(client, clock, orchestrator, "Book me a pizza place tonight", "session-789")
    assert (asked["output"], asked["reason"]) == ("For how many people?", "handoff")
    conversation = f"/conversations/{asked['conversation_id']}"
    assert client.get(conversation).json()["awaiting_user"] is True
    fake_openai.replies += [
        ask("ask_food", "A pizza place tonight for two; Alice."),
        Reply(text="Booked Pizzeria Uno for two, Alice's favourite."),
        Reply(text="Booked Pizzeria Uno for two."),
    ]
    before = len(fake_openai.requests)
    chat(client, clock, orchestrator, "Two", "session-789")
    assert recent_lines(context_of(fake_openai, before))[-2:] == [
        "user: Book me a pizza place tonight",
        "assistant: For how many people?",
    ]
    assert specialist_context(before)[-2:] == [
        "user: What food does Alice like?",
        "assistant: Pizza.",
    ]
    assert client.get(conversation).json()["awaiting_user"] is False

    # Isolation (session-A, then session-B): nothing of one session reaches another, for
    # the orchestrator and for each specialist.
    fake_openai.replies += [
        ask("ask_food", "The user prefers tea."),
        Reply(text="Noted: tea."),
        Reply(text="Tea it is."),
    ]
    chat(client, clock, orchestrator, "I prefer tea", "session-A")
    for specialist in ("ask_food", "ask_weather"):
        fake_openai.replies += [
            ask(specialist, "What does the user prefer?"),
            Reply(text="I don't know."),
            Reply(text="I don't know what you prefer."),
        ]
        before = len(fake_openai.requests)
        chat(client, clock, orchestrator, "What do I prefer?", "session-B")
        orchestrator_saw = context_of(fake_openai, before)
        assert "tea" not in orchestrator_saw
        assert "Alice" not in orchestrator_saw
        specialist_saw = context_of(fake_openai, before + 1)
        assert "tea" not in specialist_saw
        assert "Alice" not in specialist_saw
        assert "pizza" not in specialist_saw.lower()
