"""Seed 002's use cases, each a composition of the services every other surface uses: agents
by name (the caller's name guard), messages stored in a session of the agent and searched by
the one engine, core-memory blocks read and written on their versions. Nothing is stored
here that the rest of the system does not see: a message posted here is in /conversations,
feeds the session's recent turns and expires with the agent's events; a block is the one
the agent's tools edit."""

import asyncio
from collections.abc import Callable
from datetime import datetime

from api.agents import service as agents
from api.agents.models import Agent
from api.conversations import service as conversations
from api.errors import AppError, BadRequest
from api.kit.clock import Clock
from api.kit.secrets import new_id
from api.memory import service as memory
from api.memory.errors import BlockExists, VersionMismatch
from api.memory.service import BlockView
from api.messages import service as messages
from api.messages.models import Message
from api.messages.service import MessageHit
from api.search.engine import SearchEngine
from api.seed002.schemas import ContextIn, MemoryBlockIn, MessageIn
from api.store.table import Table, TransactionCancelled

SESSION_ATTEMPTS = 2  # a session deleted meanwhile is opened afresh once


class SessionClosing(AppError):
    status_code = 409
    code = "session_closing"


class AgentNameMismatch(BadRequest):
    code = "agent_name_mismatch"


async def add_message(
    search: SearchEngine,
    clock: Clock,
    stamp: Callable[[], datetime],
    email: str,
    body: MessageIn,
) -> tuple[Agent, Message]:
    """The message, stored with its vector in the session's conversation (opened on its
    first message) and searchable on every replica when this returns. `stamp` gives its
    time (each later than the last, so that messages keep their order)."""
    table = search.table
    agent = await agents.get_by_name(table, email, body.agent_name)
    session_id = body.session_id or conversations.default_session_id(email, agent.agent_id)
    for _ in range(SESSION_ATTEMPTS):
        found = await conversations.find_session(table, email, agent.agent_id, session_id)
        conversation_id = await conversations.open_session(
            table, agent, session_id, clock, found=found
        )
        created_at = stamp()
        message = Message(
            conversation_id=conversation_id,
            message_id=new_id(),
            role=body.role,
            content=body.content,
            actor_id=email,  # the caller speaks, as in a turn that names no actor
            metadata=body.metadata,
            created_at=created_at,
            ttl=messages.expires_at(created_at, agent.event_expiry_days),
        )
        try:
            await messages.record(search, email, agent.agent_id, message)
        except TransactionCancelled as e:
            if not e.refused(1):  # 1: the conversation is open (not being deleted)
                raise
            continue  # its session lookup goes with it: the next attempt opens a new one
        return agent, message
    raise SessionClosing(
        f"The conversation of session {session_id!r} is being deleted; send the message again."
    )


async def search_messages(
    search: SearchEngine, email: str, agent_name: str, query: str, limit: int
) -> tuple[Agent, list[MessageHit]]:
    agent = await agents.get_by_name(search.table, email, agent_name)
    return agent, await _relevant(search, agent, query, limit)


async def _relevant(search: SearchEngine, agent: Agent, query: str, limit: int) -> list[MessageHit]:
    """Best first (the engine's ranking: hybrid with an embedding backend), each with its
    cosine similarity to the query and the metadata stored with it."""
    found = await messages.search(
        search, agent.created_by, agent.agent_id, query, limit=limit, with_metadata=True
    )
    return found.hits


async def create_block(
    table: Table, clock: Clock, email: str, body: MemoryBlockIn
) -> tuple[Agent, BlockView]:
    """A new block holding the value's lines; BlockExists (409) when the label is taken.
    The default blocks every agent starts with (`human`, `persona`) count as absent while
    they are empty, so a seed-002 client creates them as it would on the seed's server."""
    agent = await agents.get_by_name(table, email, body.agent_name)
    try:
        created = await memory.create_block(
            table, agent.agent_id, body.label, content=body.value, clock=clock
        )
    except BlockExists:
        current = await memory.read_block(table, agent.agent_id, body.label)
        if not current.is_default or current.lines:
            raise
        try:
            created = await memory.write_lines(
                table,
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
    search: SearchEngine, agent: Agent, body: ContextIn, max_messages: int
) -> tuple[list[BlockView], list[MessageHit]]:
    """What a prompt needs: the agent's blocks that hold something, and the messages most
    relevant to the query (none for a blank query), read in one round."""
    if body.agent_name is not None and agents.normalize_name(
        body.agent_name
    ) != agents.normalize_name(agent.agent_name):
        raise AgentNameMismatch(
            "The body's agent_name names another agent than the path; leave it out or send "
            "the same name."
        )
    wanted = bool(body.query.strip()) and max_messages > 0
    blocks, hits = await asyncio.gather(
        memory.list_blocks(search.table, agent.agent_id),
        _relevant(search, agent, body.query, max_messages) if wanted else _no_hits(),
    )
    return [b for b in blocks if b.lines], hits


async def _no_hits() -> list[MessageHit]:
    return []
