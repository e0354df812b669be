"""What the runtime hands an architecture for one turn: the agent, its LLM, its tools, the
injected hooks and state, and what was read for it. An architecture uses these; it never
builds storage, memory or hooks of its own."""

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from api.agents.models import Agent
from api.conversations.messages.models import Message, Role
from api.journal.sources import UsedSources
from api.kit.clock import Clock
from api.kit.secrets import new_id
from api.llm.types import ChatMessage, ChatRequest, LLMEvent, LLMProvider, ToolCall, ToolSpec
from api.llm.types import Usage as LLMUsage
from api.memory.service import BlockView
from api.observability import llm as observed_llm
from api.runtime.coalesce import coalesced
from api.runtime.hooks import Hooks
from api.runtime.state import TurnState
from api.runtime.toolbox import Toolbox

DAY = 86_400
EndedBy = Literal["answer", "handoff"]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class TurnLLM:
    """The agent's provider and model, keeping count of the calls and tokens of the turn."""

    provider: LLMProvider
    model: str
    coalesce_seconds: float = 0.0  # text deltas this close together are sent as one
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    async def stream(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[LLMEvent]:
        self.calls += 1
        request = ChatRequest(model=self.model, messages=messages, tools=tools)
        events = observed_llm.observed(self.provider, request)
        if self.coalesce_seconds > 0:
            events = coalesced(events, self.coalesce_seconds)
        async for event in events:
            if isinstance(event, LLMUsage):
                self.input_tokens += event.input_tokens
                self.output_tokens += event.output_tokens
            yield event


class MessageClock:
    """Message times in whole microseconds, each later than the one before across all the
    turns of this process: messages sort by time (their sort key), so even a coarse or
    frozen clock must not let two share a moment."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._last = 0

    def next(self) -> int:
        self._last = max(int(self.clock.now() * 1_000_000), self._last + 1)
        return self._last

    def next_time(self) -> datetime:
        """`next()` as a time, for messages stored outside a turn (seed 002's and seed
        004's routes, MCP): they never share a moment with a turn's messages either."""
        return EPOCH + timedelta(microseconds=self.next())


@dataclass
class MessageFactory:
    """New messages of the turn, expiring after the agent's event expiry (0 keeps them)."""

    clock: MessageClock
    state: TurnState
    expiry_days: int

    def new(
        self,
        role: Role,
        content: str = "",
        *,
        tool_calls: Sequence[ToolCall] = (),
        tool_call_id: str | None = None,
        interrupted: bool = False,
    ) -> Message:
        micros = self.clock.next()
        seconds = micros // 1_000_000
        return Message(
            conversation_id=self.state.conversation_id,
            message_id=new_id(),
            role=role,
            content=content,
            actor_id=self.state.actor_id,
            tool_calls=[tool_call_item(c) for c in tool_calls],
            tool_call_id=tool_call_id,
            interrupted=interrupted,
            run_id=self.state.run_id,
            created_at=EPOCH + timedelta(microseconds=micros),
            ttl=seconds + self.expiry_days * DAY if self.expiry_days else None,
        )


def tool_call_item(call: ToolCall) -> dict[str, Any]:
    item: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": dict(call.arguments)}
    if call.problem is not None:
        item["problem"] = call.problem  # what the model sent was not stored: why
    return item


@dataclass
class Draft:
    """The answer of the step being streamed, as the run's journal saves it while it grows
    (see api/runs/journal.py): the reply message as it will be stored, fixed when the step
    starts, and the text and calls that arrived so far."""

    reply: Message | None = None
    text: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    _saved: tuple[int, int] = (0, 0)

    def follow(self, reply: Message, text: list[str], calls: list[ToolCall]) -> None:
        self.reply, self.text, self.calls, self._saved = reply, text, calls, (0, 0)

    def stop(self) -> None:
        """The reply itself is being stored: no draft of it after this."""
        self.reply = None

    def take(self) -> Message | None:
        """The reply as it stands, if it grew since the last draft taken."""
        size = (len(self.text), len(self.calls))
        if self.reply is None or size == self._saved:
            return None
        self._saved = size
        return self.reply.model_copy(
            update={
                "content": "".join(self.text),
                "tool_calls": [tool_call_item(c) for c in self.calls],
            }
        )


@dataclass
class Turn:
    agent: Agent
    prompt: str
    llm: TurnLLM
    tools: Toolbox
    hooks: Hooks
    state: TurnState
    core_memory: Sequence[BlockView]
    context: Sequence[str]  # sections the hooks added to the system prompt
    messages: MessageFactory
    max_steps: int
    draft: Draft = field(default_factory=Draft)
    # warned turns per block, read with core_memory (None: not read), for the upkeep
    core_memory_warnings: Mapping[str, int] | None = None
    # what entered its context: the hooks' sources, its search tools' results, its blocks
    used: UsedSources = field(default_factory=UsedSources)
    # how its answer came: the model's own, or handoff_to_user's question to the person
    ended_by: EndedBy = "answer"

    def system_prompt(self, own: str) -> str:
        """The architecture's own prompt followed by what the hooks added."""
        return "\n\n".join([own, *self.context])
