"""Seed 004's memory layer endpoints (`/memory/*`), served as documented, in the caller's
tenant: a `user_id` is a subject of the caller's, never another tenant's. Errors take the
seed's shape (`success: false`) beside our `code`. docs/memory-layer.md describes them."""

from typing import Annotated, Literal

from fastapi import Query, Request, Response, status

from api.agents.service import AgentNameTaken
from api.embeddings.base import EmbeddingError
from api.errors import AppError
from api.http.contract.errors import Responses, errors
from api.http.deps.app import ClockDep, MessageClockDep, ReposDep, SearchDep, SettingsDep
from api.http.deps.auth import CurrentUser
from api.http.deps.memory_runs import MemoryRunnerDep
from api.http.memory_layer_errors import SeedErrorBody, SeedErrorRoute
from api.http.query import AsOf, IncludeHistory, SearchQuery
from api.http.route_filter import Router
from api.memory.errors import (
    ArchivalMemoryNotFound,
    ContentTooLong,
    InvalidBlockName,
    InvalidCharLimit,
)
from api.memory_layer import render, service
from api.memory_layer.schemas import (
    MAX_USER_ID_CHARS,
    AddConversationRequest,
    AddConversationResponse,
    AgentIdResponse,
    ContextResponse,
    DeleteResponse,
    FullContextResponse,
    InitializeResponse,
    InitializeUserRequest,
    InitializeWithBlocksRequest,
    MemoryOut,
    MemoryRunOut,
    SearchResult,
    SummaryResponse,
    replacements,
)
from api.memory_layer.service import ArchivalRequired, InvalidSupersedes, ModelRequired
from api.memory_runs import service as memory_runs
from api.memory_runs.service import MemoryRunNotFound
from api.search.engine import SearchBusy, SemanticSearchUnavailable
from api.search.params import MAX_QUERY_CHARS, ConflictingQuery
from api.settings.service import PROVIDER_SETUP
from api.subjects.service import SubjectNotFound

# Who the memory runs' model is, at initialization: a provider to be configured, a model.
INITIALIZE = (ModelRequired, *PROVIDER_SETUP, AgentNameTaken, SearchBusy)


def seed_errors(*raised: int | type[AppError]) -> Responses:
    return errors(*raised, model=SeedErrorBody)


router = Router(
    prefix="/memory",
    tags=["memory layer (seed 004)"],
    route_class=SeedErrorRoute,
    responses=seed_errors(SubjectNotFound),
)
MAX_RESULTS = 50

UserIdQuery = Annotated[str, Query(min_length=1, max_length=MAX_USER_ID_CHARS)]
Format = Annotated[
    Literal["xml", "raw"], Query(alias="format", description="`xml` (default) or `raw`.")
]


@router.post("/initialize", operation_id="seed004_initialize", responses=seed_errors(*INITIALIZE))
async def initialize(
    body: InitializeUserRequest,
    user: CurrentUser,
    repos: ReposDep,
    search: SearchDep,
    clock: ClockDep,
) -> InitializeResponse:
    """Memory for a subject with the default blocks `human` (holding `user_info`) and
    `summary`. Again without `reset`: nothing changes; with `reset`: deleted and made anew."""
    agent, count = await service.initialize(
        repos,
        search,
        clock,
        user.email,
        body.user_id,
        user_info=body.user_info,
        reset=body.reset,
        provider=body.provider,
        model=body.model,
    )
    return InitializeResponse(
        message=f"Initialized memory for {body.user_id}",
        agent_id=agent.agent_id,
        blocks_created=count,
    )


@router.post(
    "/initialize-with-blocks",
    operation_id="seed004_initialize_with_blocks",
    responses=seed_errors(*INITIALIZE, InvalidBlockName, InvalidCharLimit, ContentTooLong),
)
async def initialize_with_blocks(
    body: InitializeWithBlocksRequest,
    user: CurrentUser,
    repos: ReposDep,
    search: SearchDep,
    clock: ClockDep,
) -> InitializeResponse:
    """Memory for a subject with custom blocks (each with its description and
    `char_limit`) beside `human` and `summary`, which always exist."""
    agent, count = await service.initialize(
        repos,
        search,
        clock,
        user.email,
        body.user_id,
        blocks=body.blocks,
        reset=body.reset,
        provider=body.provider,
        model=body.model,
    )
    return InitializeResponse(
        message=f"Initialized memory for {body.user_id}",
        agent_id=agent.agent_id,
        blocks_created=count,
    )


@router.post(
    "/add",
    operation_id="seed004_add",
    responses={
        202: {"model": AddConversationResponse, "description": "Run not ended yet"},
        **seed_errors(
            SearchBusy,
            EmbeddingError,
            MemoryRunNotFound,
            ArchivalMemoryNotFound,
            ArchivalRequired,
            InvalidSupersedes,
        ),
    },
)
async def add(
    body: AddConversationRequest,
    user: CurrentUser,
    response: Response,
    repos: ReposDep,
    runner: MemoryRunnerDep,
    message_clock: MessageClockDep,
    settings: SettingsDep,
) -> AddConversationResponse:
    """The messages stored (and, with `store_in_archival`, searchable) before this answers;
    a memory run then updates the subject's blocks. With `wait_for_completion` this answers
    when the run has ended (200), or after MEMORY_RUN_WAIT_SECONDS with 202; without, 202
    at once. Follow a run with GET /memory/runs/{run_id}. A message's `supersedes` (ours)
    replaces those archival memories of the subject's with its own (404
    `archival_memory_not_found` for an id that is not one); `replaced` says which."""

    added = await service.add(repos, runner, message_clock.next_time, user.email, body)
    run = added.run
    count = run.messages_count
    if body.wait_for_completion:
        run = await runner.wait(run, settings.memory_run_wait_seconds)
    counted = f"{count} {'message' if count == 1 else 'messages'}"
    if run.state == "completed":
        message = f"Processed {counted}"
    elif run.state == "failed":
        message = f"Stored {counted}, but the memory run failed: {run.error}"
    else:
        response.status_code = status.HTTP_202_ACCEPTED
        message = f"Stored {counted}; the memory run is {run.state}"
    return AddConversationResponse(
        success=run.state != "failed",
        run_id=run.run_id,
        message=message,
        messages_count=count,
        status=run.state,
        **replacements(added.replacing),
    )


@router.get(
    "/runs/{run_id}", operation_id="seed004_get_run", responses=seed_errors(MemoryRunNotFound)
)
async def get_run(run_id: str, user: CurrentUser, repos: ReposDep) -> MemoryRunOut:
    """A memory run: queued, running, completed or failed, with its attempts and error."""
    return MemoryRunOut.of(await memory_runs.owned(repos, user.email, run_id))


@router.get(
    "/context",
    operation_id="seed004_context",
    responses=seed_errors(SemanticSearchUnavailable, EmbeddingError),
)
async def context(
    user_id: UserIdQuery,
    user: CurrentUser,
    repos: ReposDep,
    runner: MemoryRunnerDep,
    query: Annotated[str | None, Query(max_length=MAX_QUERY_CHARS)] = None,
    max_results: Annotated[int, Query(ge=0, le=MAX_RESULTS)] = 3,
    include_summary: bool = True,
    token_budget: Annotated[
        int | None,
        Query(ge=1, description="Ours: trim combined_context to this many tokens (estimated)."),
    ] = None,
    as_of: AsOf = None,
) -> FullContextResponse:
    """The prompt-ready context: every block, then (for a query) the most relevant
    memories, in seed 004's render. The memories true now; `as_of` (ours): those true
    then (the blocks are as they are now). A replaced memory shows `(until 2025-06-01)`."""
    found = await service.context(
        repos,
        runner,
        user.email,
        user_id,
        query=query,
        max_results=max_results,
        include_summary=include_summary,
        token_budget=token_budget,
        as_of=as_of,
    )
    return FullContextResponse(
        user_context=render.xml(found.human) if found.human else "",
        summary=render.xml(found.summary) if found.summary else "",
        relevant_memories=found.combined.memories,
        combined_context=found.combined.text,
        memories=[MemoryOut.of(m) for m in found.matches],
        pending_runs=found.pending_runs,
        truncated=found.combined.truncated,
        estimated_tokens=render.estimate_tokens(found.combined.text),
    )


@router.get("/user-context", operation_id="seed004_user_context")
async def user_context(
    user_id: UserIdQuery, user: CurrentUser, repos: ReposDep, format_: Format = "xml"
) -> ContextResponse:
    """Only the `human` block: as XML, or its raw text."""
    human = await service.block(repos, user.email, user_id, render.HUMAN)
    return ContextResponse(context=render.xml(human) if format_ == "xml" else render.value(human))


@router.get("/summary", operation_id="seed004_summary")
async def summary(
    user_id: UserIdQuery, user: CurrentUser, repos: ReposDep, format_: Format = "xml"
) -> SummaryResponse:
    """Only the `summary` block: as XML, or its raw text."""
    block = await service.block(repos, user.email, user_id, render.SUMMARY)
    return SummaryResponse(summary=render.xml(block) if format_ == "xml" else render.value(block))


@router.get(
    "/search",
    responses=seed_errors(ConflictingQuery, SemanticSearchUnavailable, EmbeddingError),
    operation_id="seed004_search",
)
async def search(
    user_id: UserIdQuery,
    query: SearchQuery,
    user: CurrentUser,
    repos: ReposDep,
    engine: SearchDep,
    max_results: Annotated[int, Query(ge=1, le=MAX_RESULTS)] = 5,
    tags: Annotated[
        str | None, Query(max_length=500, description="Comma-separated, e.g. `user`: any of them.")
    ] = None,
    min_similarity: Annotated[
        float | None,
        Query(
            ge=-1.0,
            le=1.0,
            description="Ours: the least cosine similarity a semantic match needs; "
            "default: the model's floor.",
        ),
    ] = None,
    as_of: AsOf = None,
    include_history: IncludeHistory = False,
) -> SearchResult:
    """The subject's archival memories best matching the query, best first.
    `min_similarity` (ours) asks for closer matches, or looser ones, than the model's
    calibrated floor. Memories true now, unless the question is about the past or
    `include_history` (ours); `as_of` (ours): those true then. A replaced memory's result
    ends with `(until 2025-06-01)`."""
    wanted = frozenset(t.strip() for t in tags.split(",") if t.strip()) if tags else None
    found = await service.search(
        repos,
        engine,
        user.email,
        user_id,
        query,
        max_results=max_results,
        tags=wanted or None,
        min_similarity=min_similarity,
        as_of=as_of,
        include_history=include_history,
    )
    return SearchResult(
        results=[render.result_text(m) for m in found.matches],
        count=len(found.matches),
        total_found=found.total,
        memories=[MemoryOut.of(m) for m in found.matches],
    )


@router.delete(
    "/user/{user_id}", operation_id="seed004_delete_user", responses=seed_errors(SearchBusy)
)
async def delete_user(
    user_id: str, user: CurrentUser, repos: ReposDep, engine: SearchDep
) -> DeleteResponse:
    """Everything of the subject, permanently: its agent, blocks, archival memories,
    messages and runs."""
    await service.delete(repos, engine, user.email, user_id)
    return DeleteResponse(message=f"Deleted all memory for user {user_id}")


@router.get("/agent/{user_id}", operation_id="seed004_agent_of")
async def agent_of(
    user_id: str, user: CurrentUser, repos: ReposDep, settings: SettingsDep, request: Request
) -> AgentIdResponse:
    """The subject's agent, and its page in the web app (`{PUBLIC_URL}/agents/{id}`)."""
    subject = await service.subject_agent(repos, user.email, user_id)
    base = str(settings.public_url or request.base_url).rstrip("/")
    return AgentIdResponse(
        agent_id=subject.agent_id, dashboard_url=f"{base}/agents/{subject.agent_id}"
    )
