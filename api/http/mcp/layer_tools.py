"""Seed 004's memory layer over MCP (the combined context, search with scores, add with
its run id, each on the subject named by `user_id`), and the caller's agents: the same
services as /memory/* and /agents."""

from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from api.agents import service as agents
from api.http.mcp.caller import UserId, answer, caller
from api.kit.model import ApiModel
from api.memory import archival
from api.memory_layer import render
from api.memory_layer import service as seed004
from api.memory_layer.schemas import (
    MAX_USER_ID_CHARS,
    AddConversationRequest,
    MemoryLayerMessageIn,
    MemoryOut,
    Notes,
    NotReplaced,
    Replaced,
    replacements,
)
from api.search.params import AS_OF_DESCRIPTION, MAX_QUERY_CHARS, Moment
from api.subjects import service as subjects

MAX_RESULTS = 50  # as seed 004's /memory/context and /memory/search
AsOf = Annotated[Moment | None, Field(description=AS_OF_DESCRIPTION)]
IncludeHistory = Annotated[
    bool,
    Field(
        description="Also memories replaced by newer ones (each with `superseded_at`). "
        'Default: only when the question is about the past ("where did I live before?").'
    ),
]


class ContextOut(ApiModel):
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
    as_of: AsOf = None,
) -> ContextOut:
    """The memory of a seed 004 subject as one prompt-ready text: every core-memory block
    (the `human` facts, the conversation `summary`, any custom blocks), then, for a query,
    the archival memories most relevant to it: those true now, or with `as_of` those true
    then (a replaced one shows "(until 2025-06-01)"). Call it before answering a subject,
    and put `context` into your prompt."""

    async def run() -> ContextOut:
        me = caller(ctx)
        found = await seed004.context(
            me.repos,
            me.memory_runs,
            me.user.email,
            user_id,
            query=query,
            max_results=max_results,
            include_summary=include_summary,
            token_budget=token_budget,
            as_of=as_of,
        )
        return ContextOut(
            context=found.combined.text,
            memories=[MemoryOut.of(m) for m in found.matches],
            truncated=found.combined.truncated,
            estimated_tokens=render.estimate_tokens(found.combined.text),
            pending_runs=found.pending_runs,
        )

    return await answer(run())


class SearchOut(ApiModel):
    query: str
    mode: str = Field(description="hybrid (words and meaning), lexical or semantic.")
    total: int = Field(description="How many memories match in all.")
    results: list[str] = Field(
        description="The memories' texts, best first; a replaced one ends with "
        '"(until 2025-06-01)".'
    )
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
    as_of: AsOf = None,
    include_history: IncludeHistory = False,
) -> SearchOut:
    """Search an agent's (or a seed 004 subject's) archival memory by words and meaning
    together (hybrid search), best first, each memory with its score (and its semantic
    similarity). Name exactly one of `agent` and `user_id`. Memories true now, unless the
    question is about the past or `include_history`; with `as_of`, those true then. A
    replaced memory has `superseded_at` and `superseded_by`, and its text in `results`
    ends with "(until 2025-06-01)"."""

    async def run() -> SearchOut:
        me = caller(ctx)
        if (agent is None) == (user_id is None):
            raise ToolError("Name exactly one of `agent` and `user_id`.")
        if agent is not None:
            agent_id = (await me.agent(agent)).agent_id
        else:
            assert user_id is not None
            agent_id = (await subjects.get(me.repos, me.user.email, user_id)).agent_id
        wanted = frozenset(t.strip() for t in tags or () if t.strip()) or None
        found = await archival.search(
            me.search,
            agent_id,
            query,
            page_size=max_results,
            tags=wanted,
            as_of=as_of,
            include_history=include_history,
        )
        return SearchOut(
            query=found.query,
            mode=found.mode,
            total=found.total,
            results=[render.result_text(m) for m in found.matches],
            memories=[MemoryOut.of(m) for m in found.matches],
        )

    return await answer(run())


class AddOut(ApiModel):
    run_id: str = Field(description="The memory run updating the subject's blocks.")
    status: str = Field(description="queued, running, completed or failed.")
    messages_count: int
    error: str | None = None
    replaced: Replaced
    not_replaced: NotReplaced
    notes: Notes


async def memory_add(
    ctx: Context[Any, Any],
    user_id: UserId,
    messages: Annotated[
        list[MemoryLayerMessageIn], Field(min_length=1, description="The new turns, oldest first.")
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
    REST, POST /memory/initialize). A message's `supersedes` names archival memories (ids
    from memory_search) that what it says replaces: they are kept as history, and
    `replaced` and `notes` say what was replaced."""

    async def run() -> AddOut:
        me = caller(ctx)

        body = AddConversationRequest(
            user_id=user_id,
            messages=messages,
            store_in_archival=store_in_archival,
            wait_for_completion=wait_for_completion,
        )
        added = await seed004.add(
            me.repos, me.memory_runs, me.message_clock.next_time, me.user.email, body
        )
        stored = ran = added.run
        if wait_for_completion:
            ran = await me.memory_runs.wait(stored, me.settings.memory_run_wait_seconds)
        return AddOut(
            run_id=ran.run_id,
            status=ran.state,
            messages_count=stored.messages_count,
            error=ran.error,
            **replacements(added.replacing),
        )

    return await answer(run())


class AgentOut(ApiModel):
    id: str
    name: str
    architecture: str = Field(
        description="krishna-memgpt: the core and archival memory tools; categorized-memory: "
        "store_memory, search_memories and list_memories."
    )
    created_at: datetime


class AgentsOut(ApiModel):
    agents: list[AgentOut]


async def list_agents(ctx: Context[Any, Any]) -> AgentsOut:
    """Your agents (a seed 004 subject's is named "Memory: <user_id>"): the ids and names
    the other tools take as `agent`."""

    async def run() -> AgentsOut:
        me = caller(ctx)
        found = await agents.list_for(me.repos, me.user.email)
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

    return await answer(run())
