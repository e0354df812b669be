"""Conversations: a user's sessions with one of their agents."""

from datetime import UTC, datetime

from api.agents.models import Agent
from api.conversations import repository
from api.conversations.models import Conversation
from api.errors import NotFound
from api.kit.clock import Clock
from api.kit.secrets import new_id
from api.store.table import ConditionFailed, Table


class ConversationNotFound(NotFound):
    code = "conversation_not_found"


def _now(clock: Clock) -> datetime:
    return datetime.fromtimestamp(clock.now(), tz=UTC)


async def create(table: Table, agent: Agent, title: str, clock: Clock) -> Conversation:
    now = _now(clock)
    conversation = Conversation(
        conversation_id=new_id(),
        created_by=agent.created_by,
        agent_id=agent.agent_id,
        title=title,
        created_at=now,
        updated_at=now,
    )
    await repository.create(table, conversation)
    return conversation


async def get(table: Table, email: str, conversation_id: str) -> Conversation:
    conversation = await repository.get(table, email, conversation_id)
    if conversation is None:
        raise ConversationNotFound("No conversation with that id.")
    return conversation


async def rename(
    table: Table, conversation: Conversation, title: str, clock: Clock
) -> Conversation:
    renamed = conversation.model_copy(update={"title": title, "updated_at": _now(clock)})
    try:
        await repository.rename(table, renamed)
    except ConditionFailed as e:
        raise ConversationNotFound("No conversation with that id.") from e
    return renamed
