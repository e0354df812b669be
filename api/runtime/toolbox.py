"""The tools of one turn: the native tools the architecture asked for, bound to the agent
the runtime authorized, and the turn tools the runtime adds for the agent's settings
(`handoff_to_user`, a tool per specialist), which may tell the client what happens while
they run."""

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass

from api.journal.events import RunEvent
from api.llm.types import ToolCall, ToolSpec
from api.tools.native import NativeTool, ToolContext


@dataclass(frozen=True)
class ToolReply:
    """What a tool answers its call with. `handoff`: the question the turn ends with, to
    the person (handoff_to_user): the loop makes it the turn's answer."""

    text: str
    handoff: str | None = None


class TurnTool(ABC):
    """A tool the runtime makes for one turn. It yields events for the client (a
    specialist's turn, nested) and ends with its `ToolReply`."""

    spec: ToolSpec

    @property
    def name(self) -> str:
        return self.spec.name

    @abstractmethod
    def stream(self, call: ToolCall) -> AsyncGenerator[RunEvent | ToolReply, None]: ...


class Toolbox:
    def __init__(
        self,
        context: ToolContext,
        tools: Sequence[NativeTool],
        turn_tools: Sequence[TurnTool] = (),
    ) -> None:
        self.context = context
        self._tools: Mapping[str, NativeTool] = {t.name: t for t in tools}
        self._turn_tools: Mapping[str, TurnTool] = {t.name: t for t in turn_tools}
        self.changed_core_memory = False  # whether a call this turn may have changed it

    @property
    def specs(self) -> list[ToolSpec]:
        return [t.spec for t in self._tools.values()] + [t.spec for t in self._turn_tools.values()]

    def __bool__(self) -> bool:
        return bool(self._tools) or bool(self._turn_tools)

    async def stream(self, call: ToolCall) -> AsyncGenerator[RunEvent | ToolReply, None]:
        """What a call tells the client while it runs, then its reply (last)."""
        turn_tool = self._turn_tools.get(call.name)
        if turn_tool is None or call.problem is not None:
            yield ToolReply(await self.run(call))
            return
        async for item in turn_tool.stream(call):
            yield item

    async def run(self, call: ToolCall) -> str:
        """The reply to one call; a tool the model made up gets a reply, not an error."""
        tool = self._tools.get(call.name)
        if tool is None and call.name not in self._turn_tools:
            known = ", ".join([*self._tools, *self._turn_tools]) or "none"
            return f"There is no tool {call.name!r}. Available tools: {known}."
        if call.problem is not None:
            return f"Invalid arguments for {call.name}: {call.problem} (no change)"
        if tool is None:  # a turn tool: its reply, without what it told on the way
            return [r async for r in self.stream(call) if isinstance(r, ToolReply)][-1].text
        if tool.changes_core_memory:  # set before the call: a failed one may have written
            self.changed_core_memory = True
        return await tool.execute(self.context, call.arguments)
