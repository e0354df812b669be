"""A /chat turn: the agent and the session's conversation found inside the caller's tenant,
then handed to the runtime."""

import asyncio

from api.agents import service as agents
from api.agents.models import Agent
from api.agents.service import AgentNotFound
from api.chat.schemas import ChatIn
from api.conversations import service as conversations
from api.errors import BadRequest
from api.kit.aio import ready
from api.kit.clock import Clock
from api.repositories import Repositories
from api.runtime.request import TurnRequest
from api.runtime.runner import PreparedTurn, Runtime


class NotYourUserId(BadRequest):
    code = "user_id_mismatch"


async def open_turn(
    repos: Repositories,
    clock: Clock,
    runtime: Runtime,
    email: str,
    body: ChatIn,
    *,
    agent: Agent | None = None,
) -> PreparedTurn:
    """`agent`: the caller's agent `body.agent_id` names, when the caller has read it."""
    if body.user_id is not None and body.user_id != email:
        raise NotYourUserId(
            "user_id is taken from your credentials; leave it out or send your own."
        )
    session_id = body.session_id or conversations.default_session_id(email, body.agent_id)
    # Both live in the caller's own partition: one round, whoever owns the agent.
    try:
        owned, found = await asyncio.gather(
            agents.get(repos, email, body.agent_id) if agent is None else ready(agent),
            conversations.find_session(repos, email, body.agent_id, session_id),
        )
    except AgentNotFound:
        # Not an id of the caller's: a name (an id wins), read through the caller's own
        # name guard. Its default session is its id's, whichever way it was named.
        owned = await agents.get_by_name(repos, email, body.agent_id)
        session_id = body.session_id or conversations.default_session_id(email, owned.agent_id)
        found = await conversations.find_session(repos, email, owned.agent_id, session_id)
    conversation_id = await conversations.open_session(repos, owned, session_id, clock, found=found)
    request = TurnRequest(
        user_email=email,
        agent_id=owned.agent_id,
        conversation_id=conversation_id,
        actor_id=body.actor_id or email,
        session_id=session_id,
        prompt=body.prompt,
    )
    return await runtime.prepare(request, agent=owned, wait=body.wait)
