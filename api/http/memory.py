"""/agents/{agent_id}/memory: an agent's core blocks and archival memories, for people and
UIs. Every route loads the agent through OwnedAgent: another tenant's agent is a 404."""

from email.utils import format_datetime
from typing import Annotated

from fastapi import Query, Response, status

from api.agents.service import AgentNotFound
from api.embeddings.base import EmbeddingError
from api.http.contract.errors import errors
from api.http.deps.agents import OwnedAgent
from api.http.deps.app import ClockDep, ReposDep, SearchDep, SettingsDep
from api.http.preconditions import BLOCK_WRITE, IfMatch
from api.http.query import AsOf, IncludeHistory, MinSimilarity, SearchQuery
from api.http.route_filter import Router
from api.kit.forms import form_of
from api.memory import archival
from api.memory import service as memory
from api.memory.errors import (
    AlreadySuperseded,
    ArchivalMemoryNotFound,
    BlockExists,
    BlockFull,
    BlockNotFound,
    ContentTooLong,
    DefaultBlockProtected,
    DuplicateLine,
    EmptyContent,
    HistoryIncomplete,
    InvalidBlockName,
    InvalidPage,
    InvalidSupersession,
    InvalidWordLimit,
    LineOutOfRange,
    MemoryBusy,
    RestoreConflict,
    RestoreWindowPassed,
    VersionNotFound,
    etag,
)
from api.memory.models import Category
from api.memory.schemas import (
    MAX_TAGS,
    ArchivalCreate,
    ArchivalHitOut,
    ArchivalOut,
    ArchivalPage,
    ArchivalSearchOut,
    ArchivalWriteOut,
    BlockCreate,
    BlockHistoryPage,
    BlockOut,
    BlockUpdate,
    LineChangeOut,
    LineHistoryOut,
    LineIn,
    MemoryForms,
    RestoreVersion,
    SupersedeRequest,
    Tag,
)
from api.search.engine import SearchBusy, SemanticSearchUnavailable
from api.search.index import Mode as SearchMode
from api.search.params import ConflictingQuery
from api.store.table import InvalidCursor

router = Router(
    prefix="/agents/{agent_id}/memory", tags=["memory"], responses=errors(AgentNotFound)
)


@router.get("/schema", operation_id="memory_forms")
async def memory_forms(agent: OwnedAgent) -> MemoryForms:
    """The forms to create a block and to insert an archival memory (web/'s inspector draws
    them; each is accepted by its own POST when filled as it says)."""
    return MemoryForms(block=form_of(BlockCreate), archival=form_of(ArchivalCreate))


@router.get("/blocks", operation_id="memory_list_blocks")
async def list_blocks(agent: OwnedAgent, repos: ReposDep) -> list[BlockOut]:
    """Every block with its lines and capacity."""
    return [BlockOut.of(b) for b in await memory.list_blocks(repos, agent.agent_id)]


@router.post(
    "/blocks",
    operation_id="memory_create_block",
    status_code=status.HTTP_201_CREATED,
    responses=errors(InvalidBlockName, InvalidWordLimit, ContentTooLong, BlockExists, BlockFull),
)
async def create_block(
    agent: OwnedAgent, body: BlockCreate, response: Response, repos: ReposDep, clock: ClockDep
) -> BlockOut:
    created = await memory.create_block(
        repos,
        agent.agent_id,
        body.name,
        description=body.description,
        word_limit=body.word_limit,
        content=body.content,
        clock=clock,
    )
    return _tagged(response, created)


@router.get(
    "/blocks/{block}",
    operation_id="memory_read_block",
    responses=errors(InvalidBlockName, BlockNotFound),
)
async def read_block(
    agent: OwnedAgent, block: str, response: Response, repos: ReposDep
) -> BlockOut:
    """The block; its version is also the ETag, for If-Match on a later write."""
    return _tagged(response, await memory.read_block(repos, agent.agent_id, block))


@router.patch(
    "/blocks/{block}",
    operation_id="memory_update_block",
    responses=errors(InvalidWordLimit, ContentTooLong, *BLOCK_WRITE),
)
async def update_block(
    agent: OwnedAgent,
    block: str,
    body: BlockUpdate,
    response: Response,
    repos: ReposDep,
    clock: ClockDep,
    expected: IfMatch,
) -> BlockOut:
    """Description, word limit and lines in one write. With If-Match, only if the block is
    still at that version (412 `version_mismatch` with the current one otherwise)."""
    updated = await memory.update_block(
        repos,
        agent.agent_id,
        block,
        description=body.description,
        word_limit=body.word_limit,
        lines=body.lines,
        expected=expected,
        clock=clock,
        source="rest",
    )
    return _tagged(response, updated)


@router.delete(
    "/blocks/{block}",
    operation_id="memory_delete_block",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=errors(DefaultBlockProtected, *BLOCK_WRITE),
)
async def delete_block(agent: OwnedAgent, block: str, repos: ReposDep, expected: IfMatch) -> None:
    await memory.delete_block(repos, agent.agent_id, block, expected=expected)


@router.post(
    "/blocks/{block}/lines",
    operation_id="memory_append_line",
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"model": LineChangeOut, "description": "The line was there already."},
        **errors(EmptyContent, ContentTooLong, *BLOCK_WRITE),
    },
)
async def append_line(
    agent: OwnedAgent,
    block: str,
    body: LineIn,
    response: Response,
    repos: ReposDep,
    clock: ClockDep,
    expected: IfMatch,
) -> LineChangeOut:
    """Add a line at the end, with no need to read the block first. A line already there
    is not added again (200, `changed: false`, its line number): safe to retry."""
    change = await memory.append_line(
        repos, agent.agent_id, block, body.content, expected=expected, clock=clock, source="rest"
    )
    if not change.changed:
        response.status_code = status.HTTP_200_OK
    return _changed(response, change)


@router.put(
    "/blocks/{block}/lines/{line_number}",
    operation_id="memory_replace_line",
    responses=errors(EmptyContent, ContentTooLong, LineOutOfRange, DuplicateLine, *BLOCK_WRITE),
)
async def replace_line(
    agent: OwnedAgent,
    block: str,
    line_number: int,
    body: LineIn,
    response: Response,
    repos: ReposDep,
    clock: ClockDep,
    expected: IfMatch,
) -> LineChangeOut:
    """Replace line N (from 1); the same text again changes nothing (`changed: false`)."""
    change = await memory.replace_line(
        repos,
        agent.agent_id,
        block,
        line_number,
        body.content,
        expected=expected,
        clock=clock,
        source="rest",
    )
    return _changed(response, change)


@router.delete(
    "/blocks/{block}/lines/{line_number}",
    responses=errors(LineOutOfRange, *BLOCK_WRITE),
    operation_id="memory_delete_line",
)
async def delete_line(
    agent: OwnedAgent,
    block: str,
    line_number: int,
    response: Response,
    repos: ReposDep,
    clock: ClockDep,
    expected: IfMatch,
) -> LineChangeOut:
    """Remove line N; the lines below move up. Not idempotent by itself (a retry removes
    the next line): send If-Match to make a retry safe."""
    change = await memory.delete_line(
        repos, agent.agent_id, block, line_number, expected=expected, clock=clock, source="rest"
    )
    return _changed(response, change)


@router.get(
    "/blocks/{block}/history",
    responses=errors(InvalidBlockName, BlockNotFound, InvalidCursor),
    operation_id="memory_block_history",
)
async def block_history(
    agent: OwnedAgent,
    block: str,
    repos: ReposDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: str | None = None,
) -> BlockHistoryPage:
    """The block's line history, newest first: which line each version appended,
    replaced or deleted (or, for a rewrite, removed and added), when, and through what
    (`tool`, `mcp`, `rest`, `memory_run`, `compaction`). `cursor` continues a listing."""
    changes, next_cursor = await memory.block_history(
        repos, agent.agent_id, block, limit=limit, cursor=cursor
    )
    return BlockHistoryPage(changes=[LineHistoryOut.of(c) for c in changes], cursor=next_cursor)


@router.post(
    "/blocks/{block}/restore",
    operation_id="memory_restore_block",
    responses=errors(VersionNotFound, HistoryIncomplete, *BLOCK_WRITE),
)
async def restore_block(
    agent: OwnedAgent,
    block: str,
    body: RestoreVersion,
    response: Response,
    repos: ReposDep,
    clock: ClockDep,
    expected: IfMatch,
) -> BlockOut:
    """Bring back the lines the block had at `version` as a new version (its description
    and limits stay as they are now), rebuilt from its history; the history records the
    restore (`restored_from`). Refused as any rewrite when the lines no longer fit (409),
    for a version the block never had (404 `version_not_found`) or one its history cannot
    rebuild exactly (409 `history_incomplete`). With If-Match, only if the block is still
    at that version (412)."""
    restored = await memory.restore_version(
        repos, agent.agent_id, block, body.version, expected=expected, clock=clock
    )
    return _tagged(response, restored)


def _tagged(response: Response, block: memory.BlockView) -> BlockOut:
    response.headers["ETag"] = etag(block.version)
    return BlockOut.of(block)


def _changed(response: Response, change: memory.LineChange) -> LineChangeOut:
    response.headers["ETag"] = etag(change.block.version)
    return LineChangeOut.of(change)


@router.get("/archival", operation_id="memory_list_archival", responses=errors(InvalidCursor))
async def list_archival(
    agent: OwnedAgent,
    repos: ReposDep,
    search: SearchDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: str | None = None,
    category: Annotated[list[Category] | None, Query()] = None,
) -> ArchivalPage:
    """Newest first. `category` (repeatable) keeps the memories of those categories and
    adds their `total` (listed from the agent's search index); its cursor continues only a
    listing by category."""
    if category:
        listing = await archival.newest(
            search, agent.agent_id, categories=frozenset(category), limit=limit, after=cursor
        )
        return ArchivalPage(
            memories=[ArchivalOut.of(m) for m in listing.memories],
            cursor=listing.cursor,
            total=listing.total,
        )
    memories, next_cursor = await archival.list_memories(
        repos, agent.agent_id, limit=limit, cursor=cursor
    )
    return ArchivalPage(memories=[ArchivalOut.of(m) for m in memories], cursor=next_cursor)


@router.get(
    "/archival/search",
    operation_id="memory_search_archival",
    responses=errors(ConflictingQuery, SemanticSearchUnavailable, InvalidPage, EmbeddingError),
)
async def search_archival(
    agent: OwnedAgent,
    search: SearchDep,
    query: SearchQuery,
    page: Annotated[int, Query(ge=1)] = 1,
    limit: Annotated[int, Query(ge=1, le=100)] = archival.PAGE_SIZE,
    mode: SearchMode | None = None,
    category: Annotated[list[Category] | None, Query()] = None,
    tags: Annotated[list[Tag] | None, Query(max_length=MAX_TAGS)] = None,
    min_similarity: MinSimilarity = None,
    as_of: AsOf = None,
    include_history: IncludeHistory = False,
) -> ArchivalSearchOut:
    """Pages of `limit` (5 by default), best match first, each memory with its score (and
    its cosine similarity to the query when semantic ranking took part). `mode`: hybrid (the
    default with an embedding backend), lexical (BM25, words in common) or semantic.
    `category` (repeatable) keeps memories of those categories; `tags` (repeatable) those
    carrying any of those tags, or one of them as their category. `min_similarity` asks for
    closer matches, or looser ones, than the model's calibrated floor. Memories true now,
    unless the question is about the past or `include_history`; `as_of`: those true then."""
    found = await archival.search(
        search,
        agent.agent_id,
        query,
        page=page,
        page_size=limit,
        mode=mode,
        tags=frozenset(tags) if tags else None,
        categories=frozenset(category) if category else None,
        min_similarity=min_similarity,
        as_of=as_of,
        include_history=include_history,
    )
    return ArchivalSearchOut(
        query=found.query,
        page=found.page,
        pages=found.pages,
        total=found.total,
        mode=found.mode,
        memories=[ArchivalHitOut.of_match(m) for m in found.matches],
    )


@router.post(
    "/archival",
    operation_id="memory_insert_archival",
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"model": ArchivalWriteOut, "description": "The same text was stored already."},
        **errors(
            EmptyContent,
            ContentTooLong,
            ArchivalMemoryNotFound,
            EmbeddingError,
            SearchBusy,
            MemoryBusy,
        ),
    },
)
async def insert_archival(
    agent: OwnedAgent,
    body: ArchivalCreate,
    response: Response,
    repos: ReposDep,
    search: SearchDep,
) -> ArchivalWriteOut:
    """Idempotent: the same text again returns the stored memory (200). Searchable on every
    server as soon as this answers. It replaces the memories named in `supersedes` (404
    for an id that is not one of the agent's memories, before anything is written) and,
    unless the agent's `auto_supersede` is off, the current ones stating the same fact with
    another value ("Lives in: Porto" after "Lives in: Lisbon"): `replaced` lists them,
    ended and kept as history."""
    inserted = await archival.insert(
        repos,
        search,
        agent.agent_id,
        body.content,
        category=body.category,
        context=body.context,
        confidence=body.confidence,
        tags=body.tags,
        valid_from=body.valid_from,
        supersedes=body.supersedes,
        automatic=agent.auto_supersede,
    )
    if not inserted.created:
        response.status_code = status.HTTP_200_OK
    return ArchivalWriteOut.of_insert(inserted)


@router.post(
    "/archival/{memory_id}/supersede",
    operation_id="memory_supersede_archival",
    responses=errors(
        ArchivalMemoryNotFound, AlreadySuperseded, InvalidSupersession, SearchBusy, MemoryBusy
    ),
)
async def supersede_archival(
    agent: OwnedAgent, memory_id: str, body: SupersedeRequest, repos: ReposDep, search: SearchDep
) -> ArchivalOut:
    """Mark the memory as replaced by `by` (a current memory of the agent), from when `by`
    became true; the memory stays readable, exportable and searchable on request. Of two
    writers replacing one memory at once exactly one does: the other gets 409
    `already_superseded`, naming the winner."""
    ended = await archival.supersede(repos, search, agent.agent_id, memory_id, body.by)
    return ArchivalOut.of(ended)


@router.get(
    "/archival/{memory_id}",
    operation_id="memory_get_archival",
    responses=errors(ArchivalMemoryNotFound),
)
async def get_archival(agent: OwnedAgent, memory_id: str, repos: ReposDep) -> ArchivalOut:
    return ArchivalOut.of(await archival.get_memory(repos, agent.agent_id, memory_id))


UNDO_UNTIL = "Undo-Until"


@router.delete(
    "/archival/{memory_id}",
    operation_id="memory_delete_archival",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={
        204: {
            "description": "Deleted; restorable until the time `Undo-Until` gives.",
            "headers": {
                UNDO_UNTIL: {
                    "description": "Until when POST .../restore brings the memory back "
                    "(an HTTP date)",
                    "schema": {"type": "string"},
                }
            },
        },
        **errors(ArchivalMemoryNotFound, SearchBusy),
    },
)
async def delete_archival(
    agent: OwnedAgent,
    memory_id: str,
    response: Response,
    repos: ReposDep,
    search: SearchDep,
    settings: SettingsDep,
) -> None:
    """Gone from every search, listing and read at once, on every server; restorable
    (POST .../restore) until `Undo-Until` (ARCHIVAL_UNDO_SECONDS, 10 minutes by default),
    then gone for good."""
    until = await archival.delete_memory(
        repos, search, agent.agent_id, memory_id, undo_seconds=settings.archival_undo_seconds
    )
    response.headers[UNDO_UNTIL] = format_datetime(until, usegmt=True)


@router.post(
    "/archival/{memory_id}/restore",
    operation_id="memory_restore_archival",
    responses=errors(RestoreWindowPassed, RestoreConflict, SearchBusy, MemoryBusy),
)
async def restore_archival(
    agent: OwnedAgent, memory_id: str, repos: ReposDep, search: SearchDep
) -> ArchivalOut:
    """Bring back a memory deleted within its undo window, exactly as it was (its id,
    text, times, tags and category), searchable again on every server. Safe to retry: a
    memory already back is returned. 404 `restore_window_passed` once its window has
    passed; 409 `archival_text_stored_again` when the same text was stored again meanwhile
    (that memory stays)."""
    return ArchivalOut.of(await archival.restore_memory(repos, search, agent.agent_id, memory_id))
