"""Hooks and state are injected by the runtime into every architecture (seed 001): a hook
provider of the test's own sees every message of a turn in order, and an architecture
written here gets hooks, state and continuity without a line of memory code."""

from collections.abc import AsyncGenerator, Iterator
from typing import Any, ClassVar

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.journal.events import RunEvent
from api.kit.clock import FrozenClock
from api.runtime.architectures.base import AgentArchitecture
from api.runtime.architectures.registry import ARCHITECTURES, register, registered
from api.runtime.continuity import ContinuityHook
from api.runtime.hooks import AgentInitialized, HookProvider, MessageAdded, TurnFinished
from api.runtime.loop import AgentLoop
from api.runtime.turn import Turn
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.runtime.conftest import OPENAI_KEY, events_of, messages, running


class Recorder(HookProvider):
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    async def on_agent_initialized(self, event: AgentInitialized) -> None:
        agent = await event.agent()
        state = event.state  # read as seed 001's hooks read it
        seen = (state.get("actor_id"), state.get("session_id"), agent.agent_id)
        self.seen.append(("initialized", seen))

    async def on_message_added(self, event: MessageAdded) -> None:
        self.seen.append(("message", event.message))

    async def on_turn_finished(self, event: TurnFinished) -> None:
        self.seen.append(("finished", event.outcome))


class Echo(AgentArchitecture):
    """A test architecture: a prompt of its own and the runtime's loop, nothing else."""

    name = "test-echo"
    description = "Repeats after you; for tests."
    turns: ClassVar[list[Turn]] = []

    def run(self, turn: Turn) -> AsyncGenerator[RunEvent, None]:
        Echo.turns.append(turn)
        return AgentLoop(turn, system_prompt="You repeat what you are told.").stream()


@pytest.fixture
def echo() -> Iterator[type[Echo]]:
    Echo.turns.clear()
    with registered(Echo):
        yield Echo


def test_a_custom_hook_provider_sees_every_message_of_a_turn_in_order(
    settings: Settings, clock: FrozenClock
) -> None:
    recorder = Recorder()
    with running(settings, clock, hook_providers=[recorder]) as client:
        agent_id = client.post("/agents", json={"name": "Kit"}).json()["id"]
        found = events_of(
            client.post(
                "/chat",
                json={
                    "agent_id": agent_id,
                    "prompt": "My name is Alice and I work at Google",
                    "actor_id": "alice",
                    "session_id": "s-1",
                },
            )
        )
        stored = messages(client, found[0].data["conversation_id"])

    kinds = [kind for kind, _ in recorder.seen]
    assert kinds == ["initialized"] + ["message"] * 6 + ["finished"]
    assert recorder.seen[0][1] == ("alice", "s-1", agent_id)
    seen = [m for kind, m in recorder.seen if kind == "message"]
    assert [(m.role, bool(m.tool_calls)) for m in seen] == [
        ("user", False),
        ("assistant", True),
        ("tool", False),
        ("assistant", True),
        ("tool", False),
        ("assistant", False),
    ]
    # The same messages, in the same order, as the continuity hook stored them.
    assert [m.message_id for m in seen] == [m["id"] for m in stored]
    assert recorder.seen[-1] == ("finished", "completed")


def test_an_architecture_gets_hooks_state_and_continuity_without_memory_code(
    settings: Settings, clock: FrozenClock, fake_openai: FakeLLM, echo: type[Echo]
) -> None:
    recorder = Recorder()
    with running(settings, clock, hook_providers=[recorder]) as client:
        client.put(
            "/settings/providers/openai",
            json={"api_key": OPENAI_KEY, "base_url": fake_openai.base_url},
        )
        form = client.get("/agents/schema").json()
        architectures = next(f for f in form["fields"] if f["name"] == "architecture")
        assert "test-echo" in [o["value"] for o in architectures["options"]]
        created = client.post(
            "/agents",
            json={
                "name": "Parrot",
                "architecture": "test-echo",
                "provider": "openai",
                "model": "m",
            },
        )
        assert created.status_code == 201, created.text
        agent_id = created.json()["id"]
        fake_openai.replies += [Reply(text="Polly wants a cracker."), Reply(text="Again?")]
        for prompt in ("Say: Polly wants a cracker", "Once more"):
            clock.advance(1)
            body = {"agent_id": agent_id, "prompt": prompt, "session_id": "cage", "stream": False}
            assert client.post("/chat", json=body).status_code == 200

    first, second = echo.turns
    assert isinstance(first.hooks.providers[0], ContinuityHook)
    assert first.hooks.providers[1] is recorder
    assert (second.state.actor_id, second.state.session_id) == ("local@localhost", "cage")
    assert second.tools.specs == []  # it asked for no tools
    assert "tools" not in fake_openai.requests[1]
    assert fake_openai.requests[1]["messages"][0]["content"] == (
        "You repeat what you are told.\n\n"
        "Recent conversation:\n"
        "user: Say: Polly wants a cracker\n"
        "assistant: Polly wants a cracker."
    )


def test_an_agent_whose_architecture_is_gone_gets_a_clear_error(
    client: TestClient, echo: type[Echo]
) -> None:
    agent_id = client.post("/agents", json={"name": "Orphan", "architecture": "test-echo"}).json()[
        "id"
    ]
    ARCHITECTURES.pop("test-echo")
    try:
        refused = client.post("/chat", json={"agent_id": agent_id, "prompt": "hi"})
    finally:
        register(Echo)
    assert refused.status_code == 409
    assert refused.json()["code"] == "architecture_unavailable"
    assert "test-echo" in refused.json()["message"]
