"""POST /chat (seed 001): continuity by actor and session, session isolation, the last K
turns, event expiry, a restart between turns; with the offline model, on SQLite and on
DynamoDB Local. The fake OpenAI shows exactly what reached the model's context."""

import asyncio
from datetime import datetime
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.store import keys
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.runtime.conftest import (
    Store,
    events_of,
    lines_of,
    messages,
    new_agent,
    parse_sse,
    running,
    use_openai,
)

DAY = 86_400


def chat(client: httpx2.Client, clock: FrozenClock, **body: Any) -> dict[str, Any]:
    """One turn as JSON; the clock moves on a second, as it does between real turns."""
    clock.advance(1)
    answered = client.post("/chat", json={**body, "stream": False})
    assert answered.status_code == 200, answered.text
    found: dict[str, Any] = answered.json()
    return found


def said(client: httpx2.Client, clock: FrozenClock, agent_id: str, prompt: str, **body: Any) -> str:
    output: str = chat(client, clock, agent_id=agent_id, prompt=prompt, **body)["output"]
    return output


def context_of(fake: FakeLLM, request: int = -1) -> str:
    """The system prompt of a request the fake received."""
    system = fake.requests[request]["messages"][0]
    assert system["role"] == "system"
    content: str = system["content"]
    return content


def recent_lines(system_prompt: str) -> list[str]:
    _, found, section = system_prompt.partition("Recent conversation:\n")
    return section.splitlines() if found else []


def test_conversation_continuity(settings: Settings, store: Store, clock: FrozenClock) -> None:
    """Seed 001's "Test Conversation Continuity", across a restart of the app."""
    with running(settings, clock, store.open()) as client:
        agent_id = new_agent(client)
        first = chat(
            client,
            clock,
            agent_id=agent_id,
            session_id="session-789",
            prompt="My name is Alice and I love pizza",
        )
        assert first["session_id"] == "session-789"
        assert said(client, clock, agent_id, "What's my name?", session_id="session-789") == (
            "Your name is Alice. (I am the offline demo model: I remember simple facts and "
            "answer from memory.)"
        )
    with running(settings, clock, store.open()) as restarted:
        answer = said(restarted, clock, agent_id, "What food do I like?", session_id="session-789")
        assert answer.startswith("You like pizza.")
        history = messages(restarted, first["conversation_id"])
        assert [m["content"] for m in history if m["role"] == "user"] == [
            "My name is Alice and I love pizza",
            "What's my name?",
            "What food do I like?",
        ]


def test_chat_takes_an_agents_name_as_other_routes_do(
    settings: Settings, store: Store, clock: FrozenClock
) -> None:
    with running(settings, clock, store.open()) as client:
        agent_id = new_agent(client)
        name = client.get(f"/agents/{agent_id}").json()["name"]
        by_name = chat(client, clock, agent_id=name.upper(), prompt="My name is Alice")
        assert by_name["agent_id"] == agent_id
        # The default session is the agent's, named by id or by name.
        by_id = chat(client, clock, agent_id=agent_id, prompt="What's my name?")
        assert by_id["session_id"] == by_name["session_id"]
        assert by_id["conversation_id"] == by_name["conversation_id"]
        assert by_id["output"].startswith("Your name is Alice.")

        unknown = client.post("/chat", json={"agent_id": "Nobody", "prompt": "hi", "stream": False})
        assert unknown.status_code == 404
        assert unknown.json()["code"] == "agent_not_found"
        assert unknown.json()["message"] == "You have no agent named 'Nobody'."


def test_session_isolation(settings: Settings, store: Store, clock: FrozenClock) -> None:
    """Seed 001's "Test Session Isolation": what was said in one session is history of that
    session only. A fact the agent stored in a block is long-term memory, shared by all of
    the agent's sessions by design."""
    with running(settings, clock, store.open()) as client:
        agent_id = new_agent(client)
        # The offline model notices preferences but does not store them: history only.
        said(client, clock, agent_id, "I prefer tea", session_id="session-A")
        assert said(
            client, clock, agent_id, "What do I prefer?", session_id="session-B"
        ).startswith("I don't know that yet.")
        assert said(
            client, clock, agent_id, "What do I prefer?", session_id="session-A"
        ).startswith("You prefer tea.")
        # What it stores in core memory, it knows everywhere.
        said(client, clock, agent_id, "My name is Alice", session_id="session-A")
        assert lines_of(client, agent_id) == ["Name: Alice"]
        assert said(client, clock, agent_id, "What's my name?", session_id="session-B").startswith(
            "Your name is Alice."
        )


def test_another_sessions_history_never_reaches_the_context(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    agent_id = use_openai(client, fake_openai)
    fake_openai.replies += [Reply(text="Noted: tea."), Reply(text="I can't tell.")]
    said(client, clock, agent_id, "I prefer tea", session_id="session-A")
    said(client, clock, agent_id, "What do I prefer?", session_id="session-B")

    assert recent_lines(context_of(fake_openai, 0)) == []
    assert "tea" not in context_of(fake_openai, 1)
    fake_openai.replies.append(Reply(text="Tea."))
    said(client, clock, agent_id, "And now?", session_id="session-A")
    assert recent_lines(context_of(fake_openai)) == ["user: I prefer tea", "assistant: Noted: tea."]


def test_the_last_k_turns_newest_kept_oldest_first(
    settings: Settings, store: Store, clock: FrozenClock, fake_openai: FakeLLM
) -> None:
    with running(settings, clock, store.open()) as client:
        agent_id = use_openai(client, fake_openai)
        for i in range(25):
            fake_openai.replies.append(Reply(text=f"answer {i}"))
            said(client, clock, agent_id, f"question {i}")
        said(client, clock, agent_id, "question 25")

        expected = [
            line
            for i in range(15, 25)
            for line in (f"user: question {i}", f"assistant: answer {i}")
        ]
        assert recent_lines(context_of(fake_openai)) == expected


def test_k_is_set_per_agent_and_counts_turns_not_messages(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    agent_id = use_openai(client, fake_openai)
    assert client.patch(f"/agents/{agent_id}", json={"recent_turns": 12}).status_code == 200
    # Every turn stores four messages: question, tool call, tool result, answer.
    for i in range(14):
        call = ToolCallScript("core_memory_list_blocks", "{}")
        fake_openai.replies += [Reply(tool_calls=[call]), Reply(text=f"answer {i}")]
        said(client, clock, agent_id, f"question {i}")
    said(client, clock, agent_id, "question 14")

    recent = recent_lines(context_of(fake_openai))
    assert recent[0] == "user: question 2"
    assert recent[-1] == "assistant: answer 13"
    assert len(recent) == 24

    assert client.patch(f"/agents/{agent_id}", json={"recent_turns": 0}).status_code == 200
    said(client, clock, agent_id, "question 15")
    assert recent_lines(context_of(fake_openai)) == []


def test_only_the_speaking_actors_turns_are_loaded(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    agent_id = use_openai(client, fake_openai)
    fake_openai.replies += [Reply(text="Hi bot one."), Reply(text="Hi bot two."), Reply(text="ok")]
    said(client, clock, agent_id, "I am bot one", session_id="shared", actor_id="bot-1")
    said(client, clock, agent_id, "I am bot two", session_id="shared", actor_id="bot-2")
    said(client, clock, agent_id, "Who am I?", session_id="shared", actor_id="bot-1")

    assert recent_lines(context_of(fake_openai)) == ["user: I am bot one", "assistant: Hi bot one."]


def test_expired_events_are_never_loaded(
    settings: Settings, store: Store, clock: FrozenClock, fake_openai: FakeLLM
) -> None:
    with running(settings, clock, store.open()) as client:
        agent_id = use_openai(client, fake_openai)
        assert client.patch(f"/agents/{agent_id}", json={"event_expiry_days": 2}).status_code == 200
        fake_openai.replies += [Reply(text="Tea, noted."), Reply(text="Coffee, noted.")]
        old = chat(client, clock, agent_id=agent_id, prompt="I prefer tea")
        clock.advance(1.5 * DAY)
        said(client, clock, agent_id, "Now I prefer coffee")
        clock.advance(1 * DAY)  # the first turn is 2.5 days old, the second 1 day

        fake_openai.replies.append(Reply(text="Coffee."))
        said(client, clock, agent_id, "What do I prefer?")
        assert recent_lines(context_of(fake_openai)) == [
            "user: Now I prefer coffee",
            "assistant: Coffee, noted.",
        ]
        # Expired before the engine deletes them: gone from every read.
        assert [m["content"] for m in messages(client, old["conversation_id"])][:2] == [
            "Now I prefer coffee",
            "Coffee, noted.",
        ]

    async def stored() -> list[dict[str, Any]]:
        pk, sk = keys.messages_of(old["conversation_id"])
        reader = store.open()
        try:
            return (await reader.query(pk, sk=sk)).items
        finally:
            await reader.close()

    kept = asyncio.run(stored())
    assert len(kept) == 4  # the second turn and the third; the first has expired
    for item in kept:
        created = datetime.fromisoformat(item["created_at"]).timestamp()
        assert item["ttl"] == int(created) + 2 * DAY


def test_an_expiry_of_zero_keeps_events(client: TestClient, clock: FrozenClock) -> None:
    agent_id = new_agent(client, event_expiry_days=0)
    said(client, clock, agent_id, "I prefer tea")
    clock.advance(400 * DAY)
    assert said(client, clock, agent_id, "What do I prefer?").startswith("You prefer tea.")


def test_chat_streams_by_default_with_seed_defaults(client: TestClient, clock: FrozenClock) -> None:
    agent_id = new_agent(client)
    found = events_of(client.post("/chat", json={"agent_id": agent_id, "prompt": "Hello"}))

    started = found[0].data
    assert found[0].name == "run.started"
    assert started["actor_id"] == "local@localhost"
    assert started["session_id"] == f"local@localhost_{agent_id}_default"
    assert found[-1].name == "run.completed"
    # The session is a conversation like any other, named by its session id.
    listed = client.get("/conversations", params={"agent_id": agent_id}).json()["conversations"]
    assert [(c["id"], c["title"]) for c in listed] == [
        (started["conversation_id"], started["session_id"])
    ]


def test_bad_chat_requests_are_refused_and_store_nothing(client: TestClient) -> None:
    agent_id = new_agent(client)

    cases = [
        (
            {"agent_id": agent_id, "prompt": "hi", "user_id": "mallory@example.com"},
            400,
            "user_id_mismatch",
        ),
        ({"agent_id": "nope", "prompt": "hi"}, 404, "agent_not_found"),
        ({"agent_id": agent_id}, 422, "validation_error"),
        ({"agent_id": agent_id, "prompt": ""}, 422, "validation_error"),
        ({"agent_id": agent_id, "prompt": "hi", "session_id": "a\x00b"}, 422, "validation_error"),
        ({"agent_id": agent_id, "prompt": "hi", "memory_id": "m-1"}, 422, "validation_error"),
        # 200 characters, 800 bytes: more than a DynamoDB sort key can hold with its prefix.
        ({"agent_id": agent_id, "prompt": "hi", "session_id": "𝄞" * 200}, 422, "validation_error"),
    ]
    for body, status, code in cases:
        refused = client.post("/chat", json=body)
        assert refused.status_code == status, (body, refused.text)
        assert refused.json()["code"] == code
        assert refused.json()["message"]
    assert client.get("/conversations", params={"agent_id": agent_id}).json()["conversations"] == []
    # Naming yourself is allowed.
    own = client.post(
        "/chat",
        json={"agent_id": agent_id, "prompt": "hi", "user_id": "local@localhost", "stream": False},
    )
    assert own.status_code == 200, own.text


def test_keep_alive_pings_while_the_model_thinks(
    tmp_path: Any, clock: FrozenClock, fake_openai: FakeLLM
) -> None:
    settings = Settings(
        sqlite_path=tmp_path / "p.db", encryption_key="k" * 40, sse_ping_seconds=0.05
    )
    with running(settings, clock) as client:
        agent_id = use_openai(client, fake_openai)
        fake_openai.replies.append(Reply(text="Finally.", delay_seconds=0.5))
        response = client.post("/chat", json={"agent_id": agent_id, "prompt": "Think hard"})

    found, comments = parse_sse(response.text)
    assert any(c.startswith("ping") for c in comments)
    assert found[-1].name == "run.completed"


@pytest.mark.parametrize("prompt", ["x" * 32_001])
def test_a_prompt_too_long_is_refused(client: TestClient, prompt: str) -> None:
    agent_id = new_agent(client)
    refused = client.post("/chat", json={"agent_id": agent_id, "prompt": prompt})
    assert refused.status_code == 422


def test_a_long_session_id_names_its_conversation_as_far_as_a_title_goes(
    client: TestClient, clock: FrozenClock
) -> None:
    agent_id = new_agent(client)
    session_id = "s" * 250
    answer = chat(client, clock, agent_id=agent_id, prompt="Hello", session_id=session_id)
    assert answer["session_id"] == session_id
    title = client.get(f"/conversations/{answer['conversation_id']}").json()["title"]
    assert title == "s" * 200
    again = chat(client, clock, agent_id=agent_id, prompt="Again", session_id=session_id)
    assert again["conversation_id"] == answer["conversation_id"]


def test_wait_must_be_a_boolean(client: TestClient) -> None:
    agent = new_agent(client)
    refused = client.post("/chat", json={"agent_id": agent, "prompt": "hi", "wait": "yes"})
    assert refused.status_code == 422
    waited = client.post(
        "/chat", json={"agent_id": agent, "prompt": "hi", "stream": False, "wait": True}
    )
    assert waited.status_code == 200  # nothing to wait for: runs at once


async def test_a_busy_conversation_is_a_409_saying_when_to_try_again(
    client: TestClient, settings: Settings, clock: FrozenClock
) -> None:
    """Another replica holds the conversation's lease: the turn is refused, not run."""
    from api.conversations import repository as conversations
    from api.store.definition import load_definition
    from api.store.sqlite import SqliteTable

    agent = new_agent(client)
    conversation = client.post("/conversations", json={"agent_id": agent}).json()["id"]
    other = SqliteTable(
        settings.sqlite_path, settings.dynamodb_table, load_definition(), clock=clock
    )
    assert await conversations.ConversationRepository(other).take_lease(
        conversation, "elsewhere", clock.now() + 20
    )
    busy = client.post(f"/conversations/{conversation}/messages", json={"content": "hi"})
    assert busy.status_code == 409
    assert busy.json()["code"] == "conversation_busy"
    # Not the lease's lapse (20 s): the turn holding it most likely ends sooner.
    assert busy.headers["Retry-After"] == "2"
    assert '"wait": true' in busy.json()["message"]
    assert messages(client, conversation) == []
    await conversations.ConversationRepository(other).release_lease(conversation, "elsewhere")
    await other.close()
    done = client.post(
        f"/conversations/{conversation}/messages", json={"content": "hi", "stream": False}
    )
    assert done.status_code == 200
