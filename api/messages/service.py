"""Storing a message: the message in its conversation and, when it has text a person would
search for, its searchable copy (with its vector) in the agent's partition, in one
transaction, so search finds it on every replica as soon as this returns."""

from api.messages import repository
from api.messages.models import Message
from api.search import vectors
from api.search.documents import SEARCHED_ROLES, MessageRecall
from api.search.engine import SearchEngine


def searchable(message: Message) -> bool:
    """User, assistant and system text; tool plumbing (calls, results) is not searched."""
    return message.role in SEARCHED_ROLES and bool(message.content.strip())


async def record(search: SearchEngine, agent_id: str, message: Message) -> None:
    if not searchable(message):
        await repository.add(search.table, message)
        return
    (vector,) = await search.vectors([message.content])
    recall = MessageRecall(
        agent_id=agent_id,
        conversation_id=message.conversation_id,
        message_id=message.message_id,
        role=message.role,
        content=message.content,
        actor_id=message.actor_id,
        interrupted=message.interrupted,
        created_at=message.created_at,
        ttl=message.ttl,
    )
    await repository.add_searchable(
        search,
        agent_id,
        message,
        {**recall.to_dynamo_item(), **vectors.attributes(vector, search.model_id)},
    )
