"""The MCP tools: seed 000's seven and seed 003's three memory tools, run by the very
executors a turn runs (api/tools/native/, so the replies are the same strings), each on
the agent it names; and seed 004's context, search and add, and the caller's agents.

Every tool acts as the caller (`auth.caller`), inside their tenant: an agent or subject is
looked up in their partition only, so another tenant's id is "not found", as over REST."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from api.agents import service as agents
from api.agents.models import Agent
from api.config import Settings
from api.error_handlers import public_body
from api.errors import AppError
from api.kit.clock import Clock
from api.mcp import auth
from api.memory import archival
from api.memory.summarizer import TruncatingSummarizer
from api.memory_runs.service import MemoryRunner
from api.messages.schemas import MAX_QUERY_CHARS
from api.runtime.runner import Runtime
from api.search.engine import SearchEngine
from api.seed004 import render
from api.seed004 import service as seed004
from api.seed004.schemas import (
    MAX_USER_ID_CHARS,
    AddConversationRequest,
    MemoryOut,
    MessageIn,
)
from api.store.table import Table
from api.subjects import service as subjects
from api.tools.native import NATIVE_TOOLS, ToolContext
from api.users.models import User

T = TypeVar("T")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_RESULTS = 50  # as seed 004's /memory/context and /memory/search
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

AgentRef = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="The agent whose memory to use: its id or its name (list_agents shows yours).",
    ),
]
UserId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_USER_ID_CHARS,
        description="The seed 004 subject (your user_id for a person or customer) whose "
        "memory to use.",
    ),
]


# --- who is calling -------------------------------------------------------------------------


@dataclass(frozen=True)
class Caller:
    """The authenticated user and the app's services (the lifespan's state)."""

    user: User
    settings: Settings
    table: Table
    clock: Clock
    search: SearchEngine
    runtime: Runtime
    memory_runs: MemoryRunner

    async def agent(self, agent: str) -> Agent:
        return await agents.get_by_id_or_name(self.table, self.user.email, agent.strip())


def caller(ctx: Context[Any, Any]) -> Caller:
    request = ctx.request_context.request
    if request is None:  # only an HTTP request reaches these tools
        raise ToolError("This tool is served over HTTP only.")
    state = request.state
    return Caller(
        user=auth.caller(request.scope),
        settings=state.settings,
        table=state.table,
        clock=state.clock,
        search=state.search,
        runtime=state.runtime,
        memory_runs=state.memory_runs,
    )


async def _answer(work: Awaitable[T]) -> T:
    """A refusal of ours (an agent not found, a bad value) as a tool error the model reads:
    its code and message, as a REST client would see them."""
    try:
        return await work
    except AppError as e:
        body = public_body(e)
        raise ToolError(f"{body['code']}: {body['message']}") from None


# --- seed 000's and seed 003's tools, by their own executors ---------------------------------


async def _native(ctx: Context[Any, Any], tool: str, agent: str, **arguments: Any) -> str:
    async def run() -> str:
        me = caller(ctx)
        found = await me.agent(agent)
        # The summarizer compacts blocks after a turn; a tool call alone never uses it.
        context = ToolContext(me.search, found.agent_id, TruncatingSummarizer())
        given = {name: value for name, value in arguments.items() if value is not None}
        return await NATIVE_TOOLS[tool].execute(context, given)

    return await _answer(run())


def _about(tool: str, parameter: str) -> str:
    """A native tool's own description of one of its parameters."""
    described: str = NATIVE_TOOLS[tool].spec.parameters["properties"][parameter]["description"]
    return described


def _description(tool: str) -> str:
    return (
        NATIVE_TOOLS[tool].spec.description
        + "\n\nActs on the agent named by `agent` (an id or name of yours); the reply is the "
        "text the agent itself would read."
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


# --- seed 004's memory layer, and the caller's agents ----------------------------------------


class ContextOut(BaseModel):
    context: str = Field(description="Prompt-ready: the blocks, then the relevant memories.")
    memories: list[MemoryOut] = Field(description="The relevant memories it holds, best first.")
    truncated: bool = Field(description="Whether the token budget left something out.")
    estimated_tokens: int
    pending_runs: int = Field(description="Memory runs not ended yet: blocks may still change.")


async def memory_context(
    ctx: Context[Any, Any],
    user_id: UserId,
    query: Annotated[
        str | None,
        Field(
            max_length=MAX_QUERY_CHARS,
            description="What the conversation is about now: adds the memories most relevant "
            "to it.",
        ),
    ] = None,
    max_results: Annotated[int, Field(ge=0, le=MAX_RESULTS)] = 3,
    include_summary: bool = True,
    token_budget: Annotated[
        int | None,
        Field(ge=1, description="Trim the context to about this many tokens (memories first)."),
    ] = None,
) -> ContextOut:
    """The memory of a seed 004 subject as one prompt-ready text: every core-memory block
    (the `human` facts, the conversation `summary`, any custom blocks), then, for a query,
    the archival memories most relevant to it. Call it before answering a subject, and put
    `context` into your prompt."""

    async def run() -> ContextOut:
        me = caller(ctx)
        found = await seed004.context(
            me.memory_runs,
            me.user.email,
            user_id,
            query=query,
            max_results=max_results,
            include_summary=include_summary,
            token_budget=token_budget,
        )
        return ContextOut(
            context=found.combined.text,
            memories=[memory_out(m) for m in found.matches],
            truncated=found.combined.truncated,
            estimated_tokens=render.estimate_tokens(found.combined.text),
            pending_runs=found.pending_runs,
        )

    return await _answer(run())


class SearchOut(BaseModel):
    query: str
    mode: str = Field(description="hybrid (words and meaning), lexical or semantic.")
    total: int = Field(description="How many memories match in all.")
    memories: list[MemoryOut] = Field(description="Best first, with their scores.")


async def memory_search(
    ctx: Context[Any, Any],
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)],
    agent: Annotated[
        str | None,
        Field(min_length=1, max_length=200, description="An agent's id or name; or give user_id."),
    ] = None,
    user_id: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=MAX_USER_ID_CHARS,
            description="A seed 004 subject; or give agent.",
        ),
    ] = None,
    max_results: Annotated[int, Field(ge=1, le=MAX_RESULTS)] = 5,
    tags: Annotated[
        list[str] | None, Field(description="Only memories with any of these tags, e.g. user.")
    ] = None,
) -> SearchOut:
    """Search an agent's (or a seed 004 subject's) archival memory by words and meaning
    together (hybrid search), best first, each memory with its score (and its semantic
    similarity). Name exactly one of `agent` and `user_id`."""

    async def run() -> SearchOut:
        me = caller(ctx)
        if (agent is None) == (user_id is None):
            raise ToolError("Name exactly one of `agent` and `user_id`.")
        if agent is not None:
            agent_id = (await me.agent(agent)).agent_id
        else:
            assert user_id is not None
            agent_id = (await subjects.get(me.table, me.user.email, user_id)).agent_id
        wanted = frozenset(t.strip() for t in tags or () if t.strip()) or None
        found = await archival.search(
            me.search, agent_id, query, page_size=max_results, tags=wanted
        )
        return SearchOut(
            query=found.query,
            mode=found.mode,
            total=found.total,
            memories=[memory_out(m) for m in found.matches],
        )

    return await _answer(run())


class AddOut(BaseModel):
    run_id: str = Field(description="The memory run updating the subject's blocks.")
    status: str = Field(description="queued, running, completed or failed.")
    messages_count: int
    error: str | None = None


async def memory_add(
    ctx: Context[Any, Any],
    user_id: UserId,
    messages: Annotated[
        list[MessageIn], Field(min_length=1, description="The new turns, oldest first.")
    ],
    store_in_archival: bool = True,
    wait_for_completion: Annotated[
        bool,
        Field(description="Wait (up to the server's limit) until the memory run has ended."),
    ] = False,
) -> AddOut:
    """Remember new messages of a conversation with a seed 004 subject: they are stored
    (and, with store_in_archival, searchable) before this returns, and a memory run then
    updates the subject's core memory from them. The subject must exist (initialized over
    REST, POST /memory/initialize)."""

    async def run() -> AddOut:
        me = caller(ctx)
        clock = me.runtime.message_clock

        def stamp() -> datetime:
            # The runtime's message clock: messages never share a time within a process.
            return EPOCH + timedelta(microseconds=clock.next())

        body = AddConversationRequest(
            user_id=user_id,
            messages=messages,
            store_in_archival=store_in_archival,
            wait_for_completion=wait_for_completion,
        )
        stored = await seed004.add(me.memory_runs, stamp, me.user.email, body)
        ran = stored
        if wait_for_completion:
            ran = await me.memory_runs.wait(stored, me.settings.memory_run_wait_seconds)
        return AddOut(
            run_id=ran.run_id,
            status=ran.state,
            messages_count=stored.messages_count,
            error=ran.error,
        )

    return await _answer(run())


class AgentOut(BaseModel):
    id: str
    name: str
    architecture: str = Field(
        description="krishna-memgpt: the core and archival memory tools; categorized-memory: "
        "store_memory, search_memories and list_memories."
    )
    created_at: datetime


class AgentsOut(BaseModel):
    agents: list[AgentOut]


async def list_agents(ctx: Context[Any, Any]) -> AgentsOut:
    """Your agents (a seed 004 subject's is named "Memory: <user_id>"): the ids and names
    the other tools take as `agent`."""

    async def run() -> AgentsOut:
        me = caller(ctx)
        found = await agents.list_for(me.table, me.user.email)
        return AgentsOut(
            agents=[
                AgentOut(
                    id=a.agent_id,
                    name=a.agent_name,
                    architecture=a.agent_architecture,
                    created_at=a.created_at,
                )
                for a in found
            ]
        )

    return await _answer(run())


def memory_out(match: archival.Match) -> MemoryOut:
    memory = match.memory
    return MemoryOut(
        id=memory.memory_id,
        content=memory.content,
        role=render.role_of(memory.tags),
        tags=memory.tags,
        score=match.score,
        similarity=match.similarity,
        created_at=memory.created_at,
    )


def register(server: MCPServer[Any]) -> None:
    for tool, annotations in NATIVE:
        server.add_tool(
            tool,
            description=_description(tool.__name__),
            annotations=annotations,
            structured_output=False,  # the text the agent reads, as it is
        )
    server.add_tool(memory_context, annotations=READ_ONLY)
    server.add_tool(memory_search, annotations=READ_ONLY)
    server.add_tool(memory_add, annotations=WRITES)
    server.add_tool(list_agents, annotations=READ_ONLY)
