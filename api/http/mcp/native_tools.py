"""Seed 000's seven and seed 003's three memory tools over MCP, each run by the very
executor a turn runs (api/tools/native/), so the replies, refusals included, are the
strings the agent itself reads; each on the agent named by `agent`."""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from api.agents.models import Agent
from api.http.mcp.caller import CHANGES, READ_ONLY, WRITES, AgentRef, answer, caller
from api.memory.summarizer import TruncatingSummarizer
from api.runtime.architectures.registry import ARCHITECTURES
from api.tools.native import NATIVE_TOOLS, ToolContext


def offered_by(tool: str) -> list[str]:
    """The architectures whose agents have this tool."""
    return [name for name, architecture in ARCHITECTURES.items() if tool in architecture.tools]


def _check_offered(tool: str, agent: Agent) -> None:
    """An agent is used over MCP with the tools it has in its own turns: a categorized
    agent's memory is its categorized memories, which the core-memory tools never show."""
    architecture = ARCHITECTURES.get(agent.agent_architecture)
    tools = architecture.tools if architecture is not None else ()
    if tool in tools:
        return
    has = f"its tools are {', '.join(tools)}" if tools else "it has no memory tools here"
    raise ToolError(
        f"tool_not_offered: Agent {agent.agent_name!r} has the {agent.agent_architecture} "
        f"architecture, which does not offer {tool}; {has}."
    )


async def _native(ctx: Context[Any, Any], tool: str, agent: str, **arguments: Any) -> str:
    async def run() -> str:
        me = caller(ctx)
        found = await me.agent(agent)
        _check_offered(tool, found)
        # The summarizer compacts blocks after a turn; a tool call alone never uses it.
        context = ToolContext(
            me.repos,
            me.search,
            found.agent_id,
            TruncatingSummarizer(),
            source="mcp",
            auto_supersede=found.auto_supersede,
        )
        given = {name: value for name, value in arguments.items() if value is not None}
        return await NATIVE_TOOLS[tool].execute(context, given)

    return await answer(run())


def _about(tool: str, parameter: str) -> str:
    """A native tool's own description of one of its parameters."""
    described: str = NATIVE_TOOLS[tool].spec.parameters["properties"][parameter]["description"]
    return described


def description(tool: str) -> str:
    return (
        NATIVE_TOOLS[tool].spec.description
        + "\n\nActs on the agent named by `agent` (an id or name of yours), which must have "
        f"the {' or '.join(offered_by(tool))} architecture (list_agents shows each agent's); "
        "the reply is the text the agent itself would read."
    )


Block = Annotated[str, Field(min_length=1, description=_about("core_memory_read", "block"))]
LineNumber = Annotated[int, Field(ge=1, description=_about("core_memory_replace", "line_number"))]
Category = Literal["fact", "pattern", "preference", "capability"]


async def core_memory_read(ctx: Context[Any, Any], agent: AgentRef, block: Block) -> str:
    return await _native(ctx, "core_memory_read", agent, block=block)


async def core_memory_append(
    ctx: Context[Any, Any],
    agent: AgentRef,
    block: Block,
    content: Annotated[str, Field(description=_about("core_memory_append", "content"))],
) -> str:
    return await _native(ctx, "core_memory_append", agent, block=block, content=content)


async def core_memory_replace(
    ctx: Context[Any, Any],
    agent: AgentRef,
    block: Block,
    line_number: LineNumber,
    new_content: Annotated[str, Field(description=_about("core_memory_replace", "new_content"))],
) -> str:
    return await _native(
        ctx,
        "core_memory_replace",
        agent,
        block=block,
        line_number=line_number,
        new_content=new_content,
    )


async def core_memory_delete(
    ctx: Context[Any, Any], agent: AgentRef, block: Block, line_number: LineNumber
) -> str:
    return await _native(ctx, "core_memory_delete", agent, block=block, line_number=line_number)


async def core_memory_list_blocks(ctx: Context[Any, Any], agent: AgentRef) -> str:
    return await _native(ctx, "core_memory_list_blocks", agent)


async def archival_memory_insert(
    ctx: Context[Any, Any],
    agent: AgentRef,
    content: Annotated[str, Field(description=_about("archival_memory_insert", "content"))],
) -> str:
    return await _native(ctx, "archival_memory_insert", agent, content=content)


async def archival_memory_search(
    ctx: Context[Any, Any],
    agent: AgentRef,
    query: Annotated[str, Field(description=_about("archival_memory_search", "query"))],
    page: Annotated[int, Field(ge=1, description=_about("archival_memory_search", "page"))] = 1,
) -> str:
    return await _native(ctx, "archival_memory_search", agent, query=query, page=page)


async def store_memory(
    ctx: Context[Any, Any],
    agent: AgentRef,
    category: Annotated[Category, Field(description=_about("store_memory", "category"))],
    content: Annotated[str, Field(description=_about("store_memory", "content"))],
    context: Annotated[str | None, Field(description=_about("store_memory", "context"))] = None,
    confidence: Annotated[
        float, Field(ge=0.0, le=1.0, description=_about("store_memory", "confidence"))
    ] = 1.0,
) -> str:
    return await _native(
        ctx,
        "store_memory",
        agent,
        category=category,
        content=content,
        context=context,
        confidence=confidence,
    )


async def search_memories(
    ctx: Context[Any, Any],
    agent: AgentRef,
    query: Annotated[str, Field(description=_about("search_memories", "query"))],
    limit: Annotated[int, Field(ge=1, le=20, description=_about("search_memories", "limit"))] = 10,
) -> str:
    return await _native(ctx, "search_memories", agent, query=query, limit=limit)


async def list_memories(
    ctx: Context[Any, Any],
    agent: AgentRef,
    category: Annotated[Category, Field(description=_about("list_memories", "category"))],
    limit: Annotated[int, Field(ge=1, le=50, description=_about("list_memories", "limit"))] = 20,
) -> str:
    return await _native(ctx, "list_memories", agent, category=category, limit=limit)


NATIVE: list[tuple[Callable[..., Awaitable[str]], ToolAnnotations]] = [
    (core_memory_read, READ_ONLY),
    (core_memory_append, WRITES),
    (core_memory_replace, CHANGES),
    (core_memory_delete, CHANGES),
    (core_memory_list_blocks, READ_ONLY),
    (archival_memory_insert, WRITES),
    (archival_memory_search, READ_ONLY),
    (store_memory, WRITES),
    (search_memories, READ_ONLY),
    (list_memories, READ_ONLY),
]
