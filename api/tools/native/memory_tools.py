"""The registry of native tools, by name: what an architecture offers the model (the
runtime binds them to the agent in a `Toolbox`). `NATIVE_MEMORY_TOOLS` are seed 000's seven
(krishna-memgpt's), `CATEGORIZED_MEMORY_TOOLS` seed 003's three (categorized-memory's);
`DOCUMENT_TOOLS` holds `retrieve`, which the runtime offers any agent holding documents;
`NATIVE_TOOLS` holds them all."""

from collections.abc import Mapping, Sequence

from api.agents.models import Agent
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
from api.tools.native.retrieve import RETRIEVE

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

# Offered by the runtime to any agent holding documents, whatever its architecture.
DOCUMENT_TOOLS: Mapping[str, NativeTool] = {RETRIEVE.name: RETRIEVE}

NATIVE_TOOLS: Mapping[str, NativeTool] = {
    **NATIVE_MEMORY_TOOLS,
    **CATEGORIZED_MEMORY_TOOLS,
    **DOCUMENT_TOOLS,
}


def offered(agent: Agent, names: Sequence[str]) -> list[NativeTool]:
    """The tools of a turn of `agent`: its architecture's (`names`), and `retrieve` when it
    holds a document (its count is on the agent item the turn reads anyway)."""
    tools = [NATIVE_TOOLS[name] for name in names]
    if agent.documents > 0 and RETRIEVE.name not in names:
        tools.append(RETRIEVE)
    return tools
