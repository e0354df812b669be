"""The registry of native tools, by name: what an architecture offers the model (the
runtime binds them to the agent in a `Toolbox`). `NATIVE_MEMORY_TOOLS` are seed 000's seven
(krishna-memgpt's), `CATEGORIZED_MEMORY_TOOLS` seed 003's three (categorized-memory's);
`NATIVE_TOOLS` holds them all."""

from collections.abc import Mapping

from api.tools.native.archival_memory import ARCHIVAL_MEMORY_INSERT, ARCHIVAL_MEMORY_SEARCH
from api.tools.native.base import NativeTool
from api.tools.native.categorized_memory import LIST_MEMORIES, SEARCH_MEMORIES, STORE_MEMORY
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

CATEGORIZED_MEMORY_TOOLS: Mapping[str, NativeTool] = {
    tool.name: tool for tool in (STORE_MEMORY, SEARCH_MEMORIES, LIST_MEMORIES)
}

NATIVE_TOOLS: Mapping[str, NativeTool] = {**NATIVE_MEMORY_TOOLS, **CATEGORIZED_MEMORY_TOOLS}
