"""The registry of seed 000's seven memory tools, by name: what an architecture offers the
model (the runtime binds them to the agent in a `Toolbox`)."""

from collections.abc import Mapping

from api.tools.native.archival_memory import ARCHIVAL_MEMORY_INSERT, ARCHIVAL_MEMORY_SEARCH
from api.tools.native.base import NativeTool
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
