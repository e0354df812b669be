"""The registry of seed 000's seven memory tools: what the runtime offers the model and
runs when the model calls one."""

from collections.abc import Mapping

from api.llm.types import ToolCall, ToolSpec
from api.tools.native.archival_memory import ARCHIVAL_MEMORY_INSERT, ARCHIVAL_MEMORY_SEARCH
from api.tools.native.base import NativeTool, ToolContext
from api.tools.native.core_memory import (
    CORE_MEMORY_APPEND,
    CORE_MEMORY_DELETE,
    CORE_MEMORY_LIST_BLOCKS,
    CORE_MEMORY_READ,
    CORE_MEMORY_REPLACE,
)

NATIVE_MEMORY_TOOLS: Mapping[str, NativeTool] = {
    tool.name: tool
    for tool in (
        CORE_MEMORY_READ,
        CORE_MEMORY_APPEND,
        CORE_MEMORY_REPLACE,
        CORE_MEMORY_DELETE,
        CORE_MEMORY_LIST_BLOCKS,
        ARCHIVAL_MEMORY_INSERT,
        ARCHIVAL_MEMORY_SEARCH,
    )
}


def memory_tool_specs() -> list[ToolSpec]:
    return [tool.spec for tool in NATIVE_MEMORY_TOOLS.values()]


async def run_memory_tool(context: ToolContext, call: ToolCall) -> str:
    """The reply to one tool call; a name the model made up gets a reply, not an error."""
    tool = NATIVE_MEMORY_TOOLS.get(call.name)
    if tool is None:
        known = ", ".join(NATIVE_MEMORY_TOOLS)
        return f"There is no tool {call.name!r}. Available tools: {known}."
    return await tool.execute(context, call.arguments)
