"""Native tools: implemented in this service, run in-process by the runtime."""

from api.tools.native.base import NativeTool, ToolContext
from api.tools.native.memory_tools import NATIVE_MEMORY_TOOLS

__all__ = [
    "NATIVE_MEMORY_TOOLS",
    "NativeTool",
    "ToolContext",
]
