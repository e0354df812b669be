"""A /chat turn: the agent and the session's conversation found inside the caller's tenant,
then handed to the runtime."""

import asyncio

from api.agents import service as agents
from api.chat.schemas import ChatIn
from api.conversations import service as conversations
from api.errors import BadRequest
from api.kit.clock import Clock
from api.runtime.runner import PreparedTurn, Runtime, TurnRequest
from api.store.table import Table


class NotYourUserId(BadRequest):
    code = "user_id_mismatch"


async def open_turn(
    table: Table, clock: Clock, runtime: Runtime, email: str, body: ChatIn
) -> PreparedTurn:
    if body.user_id is not None and body.user_id != email:
        raise NotYourUserId(
            "user_id is taken from your credentials; leave it out or send your own."
        )
    session_id = body.session_id or conversations.default_session_id(email, body.agent_id)
    # Both live in the caller's own partition: one round, whoever owns the agent.
    agent, found = await asyncio.gather(
        agents.get(table, email, body.agent_id),
        conversations.find_session(table, email, body.agent_id, session_id),
    )
    conversation_id = await conversations.open_session(table, agent, session_id, clock, found=found)
    request = TurnRequest(
        user_email=email,
        agent_id=agent.agent_id,
        conversation_id=conversation_id,
        actor_id=body.actor_id or email,
        session_id=session_id,
        prompt=body.prompt,
    )
    return await runtime.prepare(request, agent=agent, wait=body.wait)
