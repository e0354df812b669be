"""Seed 002's endpoints (the local memory server's REST API), served as documented, in the
caller's tenant: an agent name resolves among the caller's agents only. `POST /agents` and
`GET /agents/{name}` are the agents router's own routes; `GET /health` is the health
router's. docs/local-server.md describes them."""

from typing import Annotated

from fastapi import Query, Response, status
from fastapi.exceptions import RequestValidationError

from api.agents.service import AgentNotFound
from api.config import Settings
from api.conversations.messages import service as messages
from api.embeddings.base import EmbeddingError
from api.http.contract.errors import errors
from api.http.deps.agents import NamedAgent
from api.http.deps.app import ClockDep, MessageClockDep, ReposDep, SearchDep, SettingsDep
from api.http.deps.auth import CurrentUser
from api.http.preconditions import BLOCK_WRITE, IfMatch
from api.http.route_filter import Router
from api.memory import service as memory
from api.memory.errors import (
    BlockExists,
    BlockNotFound,
    BlockTooLarge,
    ContentTooLong,
    InvalidBlockName,
    InvalidCharLimit,
    etag,
)
from api.memory.service import BlockView
from api.memory_server import service
from api.memory_server.schemas import (
    ContextIn,
    ContextOut,
    MemoryBlockIn,
    MemoryBlockOut,
    MemoryBlockUpdate,
    MemoryServerMessageIn,
    MemoryServerMessageOut,
    MessagesIn,
    SearchIn,
)
from api.search.engine import SearchBusy, SemanticSearchUnavailable
from api.search.params import ConflictingQuery

router = Router(tags=["memory server (seed 002)"], responses=errors(AgentNotFound))
MAX_LISTED = 1000


@router.post(
    "/messages",
    operation_id="seed002_add_message",
    status_code=status.HTTP_201_CREATED,
    responses=errors(service.SessionClosing, EmbeddingError, SearchBusy),
)
async def add_message(
    body: MemoryServerMessageIn,
    user: CurrentUser,
    repos: ReposDep,
    search: SearchDep,
    clock: ClockDep,
    message_clock: MessageClockDep,
) -> MemoryServerMessageOut:
    """Store a message with its embedding, in the agent's default session (or the body's
    `session_id`): searchable at once, listed in /conversations, part of the session's
    recent turns, and expiring after the agent's event expiry."""

    agent, message = await service.add_message(
        repos, search, clock, message_clock.next_time, user.email, body
    )
    return MemoryServerMessageOut.of_message(agent.agent_id, message)


@router.post(
    "/messages/batch",
    operation_id="seed002_add_messages",
    status_code=status.HTTP_201_CREATED,
    responses=errors(service.SessionClosing, EmbeddingError, SearchBusy),
)
async def add_messages(
    body: MessagesIn,
    user: CurrentUser,
    repos: ReposDep,
    search: SearchDep,
    clock: ClockDep,
    message_clock: MessageClockDep,
) -> list[MemoryServerMessageOut]:
    """Ours, beside the seed's: several messages stored as `POST /messages` stores one, in
    one transaction (all or none) and in the order sent; the learning() client stores a
    question and its answer with one request."""

    said = [service.Said(m.role, m.content, m.metadata) for m in body.messages]
    agent, stored = await service.add_messages(
        repos,
        search,
        clock,
        message_clock.next_time,
        user.email,
        body.agent_name,
        said,
        session_id=body.session_id,
    )
    return [MemoryServerMessageOut.of_message(agent.agent_id, m) for m in stored]


@router.post(
    "/messages/search",
    operation_id="seed002_search_messages",
    responses=errors(ConflictingQuery, SemanticSearchUnavailable, EmbeddingError),
)
async def search_messages(
    body: SearchIn, user: CurrentUser, repos: ReposDep, search: SearchDep, settings: SettingsDep
) -> list[MemoryServerMessageOut]:
    """The agent's messages most relevant to the query, best first, each with its cosine
    `similarity` to the query. `min_similarity` (ours) asks for closer matches, or looser
    ones, than the model's calibrated floor. `as_of` (ours): as it would have answered
    then, among the messages said by that moment."""
    limit = _search_limit(body.limit, settings)
    agent, hits = await service.search_messages(
        repos,
        search,
        user.email,
        body.agent_name,
        body.query,
        limit,
        min_similarity=body.min_similarity,
        as_of=body.as_of,
    )
    return [MemoryServerMessageOut.of_hit(agent.agent_id, h) for h in hits]


# `:path`: an agent whose name holds a "/" (sent as %2F, which the server decodes) is still
# found where the name ends the path. The block routes keep one segment: there, a "/" could
# not be told from the one before the label.
@router.get("/messages/{agent_name:path}", operation_id="seed002_list_messages")
async def list_messages(
    agent: NamedAgent,
    repos: ReposDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LISTED)] = 100,
) -> list[MemoryServerMessageOut]:
    """The agent's messages, most recent first, across all its conversations (user,
    assistant and system messages with text; a turn's tool traffic is not listed)."""
    return [
        MemoryServerMessageOut.of_copy(m)
        for m in await messages.newest(repos, agent.agent_id, limit=limit)
    ]


@router.post(
    "/memory-blocks",
    operation_id="seed002_create_block",
    status_code=status.HTTP_201_CREATED,
    responses=errors(
        InvalidBlockName, InvalidCharLimit, ContentTooLong, BlockExists, BlockTooLarge
    ),
)
async def create_block(
    body: MemoryBlockIn, user: CurrentUser, response: Response, repos: ReposDep, clock: ClockDep
) -> MemoryBlockOut:
    """A new block; 409 `block_exists` when the agent has one with that label (the empty
    `human` and `persona` blocks every agent starts with do not count)."""
    agent, block = await service.create_block(repos, clock, user.email, body)
    return _tagged(response, MemoryBlockOut.of(agent, block), block)


@router.get("/memory-blocks/{agent_name}", operation_id="seed002_list_blocks")
async def list_blocks(agent: NamedAgent, repos: ReposDep) -> list[MemoryBlockOut]:
    return [MemoryBlockOut.of(agent, b) for b in await memory.list_blocks(repos, agent.agent_id)]


@router.get(
    "/memory-blocks/{agent_name}/{label}",
    responses=errors(InvalidBlockName, BlockNotFound),
    operation_id="seed002_read_block",
)
async def read_block(
    agent: NamedAgent, label: str, response: Response, repos: ReposDep
) -> MemoryBlockOut:
    """The block; its version is also the ETag, for If-Match on a later PUT."""
    block = await memory.read_block(repos, agent.agent_id, label)
    return _tagged(response, MemoryBlockOut.of(agent, block), block)


@router.put(
    "/memory-blocks/{agent_name}/{label}",
    operation_id="seed002_replace_block",
    responses=errors(*BLOCK_WRITE),
)
async def replace_block(
    agent: NamedAgent,
    label: str,
    body: MemoryBlockUpdate,
    response: Response,
    repos: ReposDep,
    clock: ClockDep,
    expected: IfMatch,
) -> MemoryBlockOut:
    """Replace the block's value. Written on the version this request read, so an edit
    landing meanwhile (the agent appending a line) is read again, never overwritten
    unseen; with If-Match, only on the version you read (412 `version_mismatch`)."""
    block = await memory.write_lines(
        repos, agent.agent_id, label, body.value.splitlines(), expected=expected, clock=clock
    )
    return _tagged(response, MemoryBlockOut.of(agent, block), block)


@router.post(
    "/context/{agent_name:path}",
    responses=errors(SemanticSearchUnavailable, EmbeddingError),
    operation_id="seed002_context",
)
async def context(
    agent_name: str,
    body: ContextIn,
    user: CurrentUser,
    repos: ReposDep,
    search: SearchDep,
    settings: SettingsDep,
) -> ContextOut:
    """What to put in a prompt: the agent's memory blocks that hold something, and at most
    MEMORY_MAX_CONTEXT_MESSAGES messages relevant to the query, best first. `as_of` (ours):
    the relevant messages among those said by that moment."""
    agent, blocks, hits = await service.context(
        repos, search, user.email, agent_name, body, settings.memory_max_context_messages
    )
    return ContextOut(
        memory_blocks=[MemoryBlockOut.of(agent, b) for b in blocks],
        relevant_messages=[MemoryServerMessageOut.of_hit(agent.agent_id, h) for h in hits],
    )


def _tagged(response: Response, out: MemoryBlockOut, block: BlockView) -> MemoryBlockOut:
    response.headers["ETag"] = etag(block.version)
    return out


def _search_limit(limit: int | None, settings: Settings) -> int:
    """The body's limit, or the default; above MEMORY_MAX_SEARCH_LIMIT a validation error
    like any other (the maximum is a setting, so the schema cannot say it)."""
    if limit is None:
        return settings.memory_default_search_limit
    maximum = settings.memory_max_search_limit
    if limit > maximum:
        raise RequestValidationError(
            [
                {
                    "loc": ("body", "limit"),
                    "msg": f"Input should be less than or equal to {maximum}",
                    "type": "less_than_equal",
                }
            ]
        )
    return limit
