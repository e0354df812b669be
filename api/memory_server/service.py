"""Seed 002's use cases, each a composition of the services every other surface uses: agents
by name (the caller's name guard), messages stored in a session of the agent and searched by
the one engine, core-memory blocks read and written on their versions. Nothing is stored
here that the rest of the system does not see: a message posted here is in /conversations,
feeds the session's recent turns and expires with the agent's events; a block is the one
the agent's tools edit."""

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from api.agents import service as agents
from api.agents.models import Agent
from api.conversations import repository as conversations_repository
from api.conversations import service as conversations
from api.conversations.messages import service as messages
from api.conversations.messages.models import Message
from api.conversations.messages.service import MessageHit
from api.conversations.models import SessionLookup
from api.errors import AppError, BadRequest
from api.kit.clock import Clock
from api.kit.secrets import new_id
from api.memory import service as memory
from api.memory.errors import BlockExists, VersionMismatch
from api.memory.service import BlockView
from api.memory_server.schemas import ContextIn, MemoryBlockIn, MemoryServerMessageIn
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.table import TransactionCancelled

SESSION_ATTEMPTS = 2  # a session deleted meanwhile is opened afresh once


class SessionClosing(AppError):
    status_code = 409
    code = "session_closing"


class AgentNameMismatch(BadRequest):
    code = "agent_name_mismatch"


@dataclass(frozen=True)
class Said:
    """One message to store: who said it, what, and the client's metadata."""

    role: str
    content: str
    metadata: dict[str, Any] | None = None


async def add_message(
    repos: Repositories,
    search: SearchEngine,
    clock: Clock,
    stamp: Callable[[], datetime],
    email: str,
    body: MemoryServerMessageIn,
) -> tuple[Agent, Message]:
    """The message, stored with its vector in the session's conversation (opened on its
    first message) and searchable on every replica when this returns. `stamp` gives its
    time (each later than the last, so that messages keep their order)."""
    agent, (message,) = await add_messages(
        repos,
        search,
        clock,
        stamp,
        email,
        body.agent_name,
        [Said(body.role, body.content, body.metadata)],
        session_id=body.session_id,
    )
    return agent, message


async def add_messages(
    repos: Repositories,
    search: SearchEngine,
    clock: Clock,
    stamp: Callable[[], datetime],
    email: str,
    agent_name: str,
    said: Sequence[Said],
    *,
    session_id: str | None = None,
) -> tuple[Agent, list[Message]]:
    """Messages of one session stored as add_message stores one, all in one transaction
    (all or none), embedded in one call, in the order given."""
    texts = list(dict.fromkeys(s.content for s in said))

    async def session_of(agent_id: str) -> tuple[str, SessionLookup | None]:
        chosen = session_id or conversations.default_session_id(email, agent_id)
        return chosen, await conversations.find_session(repos, email, agent_id, chosen)

    # The agent, its session and the vectors at once: one hop to the store.
    (agent, (session, found)), embedded = await asyncio.gather(
        agents.by_name_with(repos, email, agent_name, session_of), search.vectors(texts)
    )
    vectors = dict(zip(texts, embedded, strict=True))
    for attempt in range(SESSION_ATTEMPTS):
        if attempt:
            found = await conversations.find_session(repos, email, agent.agent_id, session)
        conversation_id = await conversations.open_session(
            repos, agent, session, clock, found=found
        )
        stored = [_message(agent, email, conversation_id, s, stamp()) for s in said]
        ops, copies = messages.recorded_ops(search, email, agent.agent_id, stored, vectors)
        try:
            await search.commit(agent.agent_id, ops, upserts=copies)
        except TransactionCancelled as e:
            if not e.refused(conversations_repository.OPEN):
                raise
            continue  # its session lookup goes with it: the next attempt opens a new one
        return agent, stored
    raise SessionClosing(
        f"The conversation of session {session!r} is being deleted; send the messages again."
    )


def _message(
    agent: Agent, email: str, conversation_id: str, said: Said, created_at: datetime
) -> Message:
    return Message(
        conversation_id=conversation_id,
        message_id=new_id(),
        role=said.role,
        content=said.content,
        actor_id=email,  # the caller speaks, as in a turn that names no actor
        metadata=said.metadata,
        created_at=created_at,
        ttl=messages.expires_at(created_at, agent.event_expiry_days),
    )


async def search_messages(
    repos: Repositories,
    search: SearchEngine,
    email: str,
    agent_name: str,
    query: str,
    limit: int,
    *,
    min_similarity: float | None = None,
    as_of: datetime | None = None,
) -> tuple[Agent, list[MessageHit]]:
    agent = await agents.get_by_name(repos, email, agent_name)
    return agent, await _relevant(
        repos,
        search,
        email,
        agent.agent_id,
        query,
        limit,
        min_similarity=min_similarity,
        as_of=as_of,
    )


async def _relevant(
    repos: Repositories,
    search: SearchEngine,
    owner: str,
    agent_id: str,
    query: str,
    limit: int,
    *,
    min_similarity: float | None = None,
    as_of: datetime | None = None,
) -> list[MessageHit]:
    """Best first (the engine's ranking: hybrid with an embedding backend), each with its
    cosine similarity to the query and the metadata stored with it. `min_similarity`: the
    least cosine a semantic match needs (None: the model's floor). `as_of`: among the
    messages said by that moment."""
    found = await messages.search(
        repos,
        search,
        owner,
        agent_id,
        query,
        limit=limit,
        with_metadata=True,
        min_similarity=min_similarity,
        as_of=as_of,
    )
    return found.hits


async def create_block(
    repos: Repositories, clock: Clock, email: str, body: MemoryBlockIn
) -> tuple[Agent, BlockView]:
    """A new block holding the value's lines; BlockExists (409) when the label is taken.
    The default blocks every agent starts with (`human`, `persona`) count as absent while
    they are empty, so a seed-002 client creates them as it would on the seed's server."""
    agent = await agents.get_by_name(repos, email, body.agent_name)
    try:
        created = await memory.create_block(
            repos, agent.agent_id, body.label, content=body.value, clock=clock
        )
    except BlockExists:
        current = await memory.read_block(repos, agent.agent_id, body.label)
        if not current.is_default or current.lines:
            raise
        try:
            created = await memory.write_lines(
                repos,
                agent.agent_id,
                current.name,
                body.value.splitlines(),
                expected=current.version,
                clock=clock,
            )
        except VersionMismatch:  # written meanwhile: it exists now
            raise BlockExists(current.name) from None
    return agent, created


async def context(
    repos: Repositories,
    search: SearchEngine,
    email: str,
    agent_name: str,
    body: ContextIn,
    max_messages: int,
) -> tuple[Agent, list[BlockView], list[MessageHit]]:
    """What a prompt needs: the agent's blocks that hold something, and the messages most
    relevant to the query (none for a blank query). Called before every model call, so
    its reads are few and together: the agent (by the id last found for its name, else
    its name's guard first), its blocks and the search's reads at once; the hits'
    metadata comes from the index. `as_of`: the messages said by then (the blocks are as
    they are now)."""
    if body.agent_name is not None and agents.normalize_name(
        body.agent_name
    ) != agents.normalize_name(agent_name):
        await agents.id_by_name(repos, email, agent_name)  # an unknown agent is a 404 first
        raise AgentNameMismatch(
            "The body's agent_name names another agent than the path; leave it out or send "
            "the same name."
        )
    wanted = bool(body.query.strip()) and max_messages > 0

    async def reads(agent_id: str) -> tuple[list[BlockView], list[MessageHit]]:
        # The blocks (one query) and the search, both sent with the agent's read.
        return await asyncio.gather(
            memory.list_blocks(repos, agent_id),
            _relevant(repos, search, email, agent_id, body.query, max_messages, as_of=body.as_of)
            if wanted
            else _no_hits(),
        )

    agent, (blocks, hits) = await agents.by_name_with(repos, email, agent_name, reads)
    return agent, [b for b in blocks if b.lines], hits


async def _no_hits() -> list[MessageHit]:
    return []
