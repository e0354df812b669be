"""The tools of one turn: the native tools the architecture asked for, bound to the agent
the runtime authorized."""

from collections.abc import Mapping, Sequence

from api.llm.types import ToolCall, ToolSpec
from api.tools.native import NativeTool, ToolContext


class Toolbox:
    def __init__(self, context: ToolContext, tools: Sequence[NativeTool]) -> None:
        self.context = context
        self._tools: Mapping[str, NativeTool] = {t.name: t for t in tools}
        self.changed_core_memory = False  # whether a call this turn may have changed it

    @property
    def specs(self) -> list[ToolSpec]:
        return [t.spec for t in self._tools.values()]

    def __bool__(self) -> bool:
        return bool(self._tools)

    async def run(self, call: ToolCall) -> str:
        """The reply to one call; a tool the model made up gets a reply, not an error."""
        tool = self._tools.get(call.name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return f"There is no tool {call.name!r}. Available tools: {known}."
        if call.problem is not None:
            return f"Invalid arguments for {call.name}: {call.problem} (no change)"
        if tool.changes_core_memory:  # set before the call: a failed one may have written
            self.changed_core_memory = True
        return await tool.execute(self.context, call.arguments)
