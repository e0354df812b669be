"""A turn stopped at any point leaves a consistent conversation, and every hook hears how
it ended: cancelled while a tool runs, a hook that fails, a provider that fails."""

import asyncio
import re
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from api.agents import service as agents
from api.agents.models import Agent
from api.agents.schemas import AgentCreate
from api.config import Settings
from api.conversations import repository as conversations_repository
from api.conversations import service as conversations
from api.conversations.messages.models import Message
from api.conversations.models import Conversation
from api.http.sse import event_stream, relay
from api.journal.events import RunEvent, ToolCalled
from api.kit.clock import FrozenClock
from api.llm.types import ToolSpec
from api.repositories import Repositories
from api.runtime import lease
from api.runtime.architectures.base import AgentArchitecture
from api.runtime.architectures.registry import ARCHITECTURES, registered
from api.runtime.hooks import AgentInitialized, HookProvider, Hooks, MessageAdded, TurnFinished
from api.runtime.lease import ConversationBusy
from api.runtime.loop import TOOL_INTERRUPTED, AgentLoop
from api.runtime.request import TurnRequest
from api.runtime.runner import PreparedTurn, Runtime
from api.runtime.state import TurnState
from api.runtime.toolbox import Toolbox
from api.runtime.turn import MessageClock, MessageFactory, Turn
from api.search.engine import SearchEngine
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import StoreError
from api.tools.native import NativeTool
from api.tools.native.base import Arguments, ToolContext, schema
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.runtime.assembly import runtime_on
from tests.runtime.conftest import messages, new_conversation, parse_sse, running, use_openai

EMAIL = "ann@example.com"


class Outcomes(HookProvider):
    def __init__(self) -> None:
        self.outcomes: list[str] = []

    async def on_turn_finished(self, event: TurnFinished) -> None:
        self.outcomes.append(event.outcome)


async def never_answer(context: ToolContext, arguments: Arguments) -> str:
    await asyncio.Event().wait()
    return "unreachable"


class Stuck(AgentArchitecture):
    """Offers the offline model its append tool, which never answers."""

    name = "test-stuck"
    description = "Its one tool never answers; for tests."

    def run(self, turn: Turn) -> AsyncGenerator[RunEvent, None]:
        spec = ToolSpec("core_memory_append", "Never answers.", schema({}, []))
        tools = Toolbox(turn.tools.context, [NativeTool(spec, never_answer)])
        return AgentLoop(turn, system_prompt="You are stuck.", tools=tools).stream()


@dataclass
class Stopped:
    """A runtime on SQLite with an agent on the Stuck architecture, and its conversation."""

    table: SqliteTable
    repos: Repositories
    runtime: Runtime
    outcomes: Outcomes
    agent: Agent
    conversation: Conversation

    async def stored(self) -> list[Message]:
        found, _ = await self.repos.messages.oldest_first(
            self.conversation.conversation_id, limit=10, cursor=None
        )
        return found


@pytest.fixture
async def stuck(tmp_path: Path, clock: FrozenClock) -> AsyncIterator[Stopped]:
    table = SqliteTable(tmp_path / "s.db", "stuck", load_definition(), clock=clock)
    repos = Repositories.over(table)
    await table.create()
    settings = Settings(sqlite_path=tmp_path / "s.db", encryption_key="k" * 40)
    outcomes = Outcomes()
    search = SearchEngine(repos.search, None, clock)
    runtime = runtime_on(table, clock, settings, search=search, hook_providers=[outcomes])
    with registered(Stuck):
        create = AgentCreate(name="Stuck", architecture="test-stuck")
        agent, _ = await agents.create(repos, EMAIL, create, clock, architectures=ARCHITECTURES)
        conversation = await conversations.create(repos, agent, "", clock)
        yield Stopped(table, repos, runtime, outcomes, agent, conversation)
    await table.close()


async def until_a_tool_runs(prepared: PreparedTurn) -> "asyncio.Task[None]":
    """The run in a task of its own, once its tool call has come."""
    called = asyncio.Event()

    async def run() -> None:
        async for event in prepared.stream():
            if isinstance(event, ToolCalled):
                called.set()

    task = asyncio.ensure_future(run())
    await asyncio.wait_for(called.wait(), 10)
    await asyncio.sleep(0)  # the tool is running now
    return task


async def test_cancelled_while_a_tool_runs(stuck: Stopped) -> None:
    request = TurnRequest.in_conversation(stuck.conversation, "My name is Alice", None)
    task = await until_a_tool_runs(await stuck.runtime.prepare(request))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    stored = await stuck.stored()
    assert [(m.role, m.interrupted) for m in stored] == [
        ("user", False),
        ("assistant", False),
        ("tool", True),
    ]
    assert stored[2].content == TOOL_INTERRUPTED
    assert stored[2].tool_call_id == stored[1].tool_calls[0]["id"]
    assert stuck.outcomes.outcomes == ["interrupted"]


class Broken(HookProvider):
    async def on_agent_initialized(self, event: AgentInitialized) -> None:
        raise RuntimeError("this hook is broken")


def test_a_failing_hook_fails_the_turn_before_anything_is_stored(
    settings: Settings, clock: FrozenClock
) -> None:
    with running(settings, clock, hook_providers=[Broken()]) as client:
        agent_id = client.post("/agents", json={"name": "Kit"}).json()["id"]
        conversation_id = new_conversation(client, agent_id)
        with pytest.raises(RuntimeError, match="broken"):
            client.post(f"/conversations/{conversation_id}/messages", json={"content": "hi"})
        assert messages(client, conversation_id) == []


def test_hooks_hear_a_failed_turn(
    settings: Settings, clock: FrozenClock, fake_openai: FakeLLM
) -> None:
    outcomes = Outcomes()
    with running(settings, clock, hook_providers=[outcomes]) as client:
        agent_id = use_openai(client, fake_openai)
        fake_openai.replies += [Reply(text="fine"), Reply(status=401)]
        body: dict[str, Any] = {"agent_id": agent_id, "prompt": "hi", "stream": False}
        assert client.post("/chat", json=body).status_code == 200
        clock.advance(1)
        assert client.post("/chat", json=body).status_code == 400
    assert outcomes.outcomes == ["completed", "failed"]


class RefusesQuestions(HookProvider):
    async def on_message_added(self, event: MessageAdded) -> None:
        if event.message.role == "user":
            raise StoreError("the store refused the question")


def test_nothing_reaches_the_client_before_the_question_is_stored(
    settings: Settings, clock: FrozenClock, fake_openai: FakeLLM
) -> None:
    with running(settings, clock, hook_providers=[RefusesQuestions()]) as client:
        agent_id = use_openai(client, fake_openai)
        fake_openai.replies.append(Reply(text="An answer nobody should see"))
        conversation_id = new_conversation(client, agent_id)
        found, _ = parse_sse(
            client.post(f"/conversations/{conversation_id}/messages", json={"content": "hi"}).text
        )
    assert [e.name for e in found] == ["run.started", "error", "run.failed"]
    assert found[1].data["code"] == "store_error"


class Slow(HookProvider):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_message_added(self, event: MessageAdded) -> None:
        await asyncio.sleep(0.05)
        self.seen.append(event.message.content)


async def test_a_message_is_added_whole_through_repeated_cancellation(clock: FrozenClock) -> None:
    first, second = Slow(), Slow()
    state = TurnState("ann@example.com", "a", "c", "ann", "s", "r")
    hooks = Hooks([first, second], state)
    factory = MessageFactory(MessageClock(clock), state, 0)

    adding = asyncio.ensure_future(hooks.message_added(factory.new("user", "hello")))
    await asyncio.sleep(0.01)
    adding.cancel()
    await asyncio.sleep(0.06)  # the first provider is done, the second under way
    adding.cancel()
    with pytest.raises(asyncio.CancelledError):
        await adding
    assert first.seen == second.seen == ["hello"]


async def test_a_server_shutting_down_mid_turn_ends_the_stream_with_an_error(
    stuck: Stopped,
) -> None:
    request = TurnRequest.in_conversation(stuck.conversation, "My name is Alice", None)
    names: list[str | None] = []
    async for sent in relay(await stuck.runtime.prepare(request), grace_seconds=0):
        found = [n.decode() for n in re.findall(rb"^event: (.+)\r$", sent, re.MULTILINE)]
        names += found  # those ready together came in one send
        if "tool.call" in found:
            await stuck.runtime.stop()  # as the lifespan does at shutdown
    assert names == ["run.started", "tool.call", "error", "run.failed"]
    assert [m.role for m in await stuck.stored()] == ["user", "assistant", "tool"]


async def test_one_turn_at_a_time_in_a_conversation(stuck: Stopped, clock: FrozenClock) -> None:
    runtime = stuck.runtime
    elsewhere = await conversations.create(stuck.repos, stuck.agent, "", clock)
    request = TurnRequest.in_conversation(stuck.conversation, "My name is Alice", None)
    first = await runtime.prepare(request)
    with pytest.raises(ConversationBusy) as busy:  # even before the first one started
        await runtime.prepare(request)
    assert busy.value.headers()["Retry-After"] == "2"
    task = await until_a_tool_runs(first)

    with pytest.raises(ConversationBusy):
        await runtime.prepare(request)
    # Other conversations go on.
    other = await runtime.prepare(TurnRequest.in_conversation(elsewhere, "Hello", None))
    await other.lease.free()

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    again = await runtime.prepare(request)  # free again once the turn ended
    await again.lease.free()


async def test_two_replicas_never_run_two_turns_in_one_conversation(
    stuck: Stopped, clock: FrozenClock, tmp_path: Path
) -> None:
    """Another process on the same file: its own runtime, its own connection."""
    settings = Settings(sqlite_path=tmp_path / "s.db", encryption_key="k" * 40)
    table = SqliteTable(tmp_path / "s.db", "stuck", load_definition(), clock=clock)
    other = runtime_on(table, clock, settings)
    request = TurnRequest.in_conversation(stuck.conversation, "My name is Alice", None)
    first = await stuck.runtime.prepare(request)
    with pytest.raises(ConversationBusy):
        await other.prepare(request)
    await first.lease.free()
    second = await other.prepare(request)  # the first replica's turn is over
    with pytest.raises(ConversationBusy):
        await stuck.runtime.prepare(request)
    # A replica that died holding the lease frees it by expiry.
    clock.advance(lease.LEASE_SECONDS + 1)
    third = await stuck.runtime.prepare(request)
    assert (
        await conversations_repository.ConversationRepository(table).renew_lease(
            stuck.conversation.conversation_id, second.turn.state.run_id, clock.now() + 30
        )
        is False
    )  # the lapsed holder cannot take it back
    await third.lease.free()
    await table.close()


async def test_a_turn_whose_stream_never_started_frees_its_conversation_at_once(
    stuck: Stopped,
) -> None:
    request = TurnRequest.in_conversation(stuck.conversation, "My name is Alice", None)
    prepared = await stuck.runtime.prepare(request)
    with pytest.raises(ConversationBusy):
        await stuck.runtime.prepare(request)

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def gone(message: Any) -> None:
        raise OSError("the client is gone")

    scope = {"type": "http", "method": "POST", "path": "/chat", "headers": []}
    with pytest.raises(OSError, match="gone"):
        await event_stream(prepared, ping_seconds=15)(scope, receive, gone)
    assert not prepared.began
    again = await stuck.runtime.prepare(request)  # no 409: the lease was freed
    assert again.lease.held
    await again.abandon()


async def test_events_ready_together_go_as_one_send(stuck: Stopped, clock: FrozenClock) -> None:
    talker, _ = await agents.create(
        stuck.repos, EMAIL, AgentCreate(name="Talker"), clock, architectures=ARCHITECTURES
    )
    conversation = await conversations.create(stuck.repos, talker, "", clock)
    request = TurnRequest.in_conversation(conversation, "Hello there", None)
    sends: list[bytes] = []
    async for sent in relay(await stuck.runtime.prepare(request), grace_seconds=0):
        sends.append(sent)
        if len(sends) == 1:
            await asyncio.sleep(0.5)  # a busy loop: the rest of the run is ready meanwhile
    ids = [int(i) for s in sends for i in re.findall(rb"^id: (\d+)\r$", s, re.MULTILINE)]
    names = [n for s in sends for n in re.findall(rb"^event: (.+)\r$", s, re.MULTILINE)]
    assert len(sends) == 2  # run.started, then everything else at once
    assert ids == list(range(1, len(ids) + 1))
    assert names[0] == b"run.started"
    assert names[-1] == b"run.completed"
    assert b"text.delta" in names
