"""Native tools: implemented in this service, run in-process by the runtime."""

from api.tools.native.base import NativeTool, ToolContext
from api.tools.native.memory_tools import (
    CATEGORIZED_MEMORY_TOOLS,
    NATIVE_MEMORY_TOOLS,
    NATIVE_TOOLS,
    offered,
)

__all__ = [
    "CATEGORIZED_MEMORY_TOOLS",
    "NATIVE_MEMORY_TOOLS",
    "NATIVE_TOOLS",
    "NativeTool",
    "ToolContext",
    "offered",
]
