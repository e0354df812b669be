"""/agents/{agent_id}/messages/search: an agent's messages found by what they say, across all
its conversations or within one, through the one search engine."""

from datetime import datetime
from typing import Annotated

from fastapi import Query

from api.agents.service import AgentNotFound
from api.conversations.messages import service
from api.conversations.messages.models import SaidRole
from api.conversations.messages.schemas import ID_PATTERN, MessageHitOut, MessageSearchOut
from api.conversations.messages.service import InvalidTimeRange
from api.embeddings.base import EmbeddingError
from api.http.contract.errors import errors
from api.http.deps.agents import OwnedAgent
from api.http.deps.app import ReposDep, SearchDep
from api.http.query import AsOf, MinSimilarity, SearchQuery
from api.http.route_filter import Router
from api.search.engine import SemanticSearchUnavailable
from api.search.index import Mode
from api.search.params import ConflictingQuery

router = Router(prefix="/agents/{agent_id}/messages", tags=["messages"])


@router.get(
    "/search",
    operation_id="messages_search",
    responses=errors(
        AgentNotFound,
        InvalidTimeRange,
        ConflictingQuery,
        SemanticSearchUnavailable,
        EmbeddingError,
    ),
)
async def search_messages(
    agent: OwnedAgent,
    repos: ReposDep,
    search: SearchDep,
    query: SearchQuery,
    mode: Mode | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    offset: Annotated[int, Query(ge=0, le=10_000)] = 0,
    role: Annotated[list[SaidRole] | None, Query(description="Only these roles.")] = None,
    actor_id: Annotated[str | None, Query(max_length=256, pattern=ID_PATTERN)] = None,
    session_id: Annotated[str | None, Query(max_length=512, pattern=ID_PATTERN)] = None,
    conversation_id: Annotated[str | None, Query(max_length=64)] = None,
    after: Annotated[datetime | None, Query(description="Said at or after this time.")] = None,
    before: Annotated[datetime | None, Query(description="Said before this time.")] = None,
    min_similarity: MinSimilarity = None,
    as_of: AsOf = None,
) -> MessageSearchOut:
    """Best first, each with its score and (when semantic ranking took part) its cosine
    similarity to the query (`query`; `q`, its former name, is taken too). `mode`: hybrid
    (the default with an embedding backend), lexical or semantic. A session id names a
    conversation as `POST /chat` does; one that does not exist finds nothing. A time
    without a zone is UTC. `min_similarity` asks for closer matches, or looser ones, than
    the model's calibrated floor. `as_of`: as it would have answered then (the messages
    said by that moment)."""
    result = await service.search(
        repos,
        search,
        agent.created_by,
        agent.agent_id,
        query,
        mode=mode,
        limit=limit,
        offset=offset,
        roles=frozenset(role) if role else None,
        actor_id=actor_id,
        session_id=session_id,
        conversation_id=conversation_id,
        after=after,
        before=before,
        min_similarity=min_similarity,
        as_of=as_of,
    )
    return MessageSearchOut(
        query=query,
        total=result.total,
        mode=result.mode,
        messages=[MessageHitOut.of(h) for h in result.hits],
    )
