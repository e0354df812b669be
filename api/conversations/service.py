"""Conversations: a user's sessions with one of their agents."""

from datetime import UTC, datetime

from api.agents.models import Agent
from api.conversations.messages import repository as message_items
from api.conversations.models import Conversation, SessionLookup
from api.errors import NotFound
from api.kit.clock import Clock
from api.kit.secrets import new_id
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.table import ConditionFailed, TransactionCancelled


class ConversationNotFound(NotFound):
    code = "conversation_not_found"


def _now(clock: Clock) -> datetime:
    return datetime.fromtimestamp(clock.now(), tz=UTC)


MAX_TITLE_CHARS = 200


def _new(agent: Agent, title: str, clock: Clock, session_id: str | None = None) -> Conversation:
    now = _now(clock)
    conversation_id = new_id()
    return Conversation(
        conversation_id=conversation_id,
        created_by=agent.created_by,
        agent_id=agent.agent_id,
        title=title[:MAX_TITLE_CHARS],
        session_id=session_id or conversation_id,
        created_at=now,
        updated_at=now,
        last_activity_at=now,
    )


def _lookup(conversation: Conversation, session_id: str) -> SessionLookup:
    return SessionLookup(
        created_by=conversation.created_by,
        agent_id=conversation.agent_id,
        session_id=session_id,
        conversation_id=conversation.conversation_id,
    )


async def create(repos: Repositories, agent: Agent, title: str, clock: Clock) -> Conversation:
    """A new conversation; its id is also its session id, so /chat can continue it."""
    conversation = _new(agent, title, clock)
    await repos.conversations.create_for_session(
        conversation, _lookup(conversation, conversation.conversation_id)
    )
    return conversation


def default_session_id(email: str, agent_id: str) -> str:
    """Seed 001's default session: `{user_id}_{agent_id}_default`."""
    return f"{email}_{agent_id}_default"


async def find_session(
    repos: Repositories, email: str, agent_id: str, session_id: str
) -> SessionLookup | None:
    return await repos.conversations.session(email, agent_id, session_id)


async def open_session(
    repos: Repositories, agent: Agent, session_id: str, clock: Clock, *, found: SessionLookup | None
) -> str:
    """The conversation a client's session id stands for, inside the agent owner's tenant:
    the one `found` names, or a new one on the session's first turn."""
    if found is not None:
        return found.conversation_id
    conversation = _new(agent, session_id, clock, session_id)
    try:
        await repos.conversations.create_for_session(
            conversation, _lookup(conversation, session_id)
        )
    except TransactionCancelled:
        # Opened by a concurrent first turn: that conversation is the session's.
        existing = await repos.conversations.session(agent.created_by, agent.agent_id, session_id)
        if existing is None:
            raise
        return existing.conversation_id
    return conversation.conversation_id


async def get(repos: Repositories, email: str, conversation_id: str) -> Conversation:
    conversation = await repos.conversations.get(email, conversation_id)
    if conversation is None:
        raise ConversationNotFound("No conversation with that id.")
    return conversation


async def rename(
    repos: Repositories, conversation: Conversation, title: str, clock: Clock
) -> Conversation:
    renamed = conversation.model_copy(update={"title": title, "updated_at": _now(clock)})
    try:
        await repos.conversations.rename(renamed)
    except ConditionFailed as e:
        raise ConversationNotFound("No conversation with that id.") from e
    return renamed


async def delete(repos: Repositories, search: SearchEngine, conversation: Conversation) -> None:
    """The conversation, its messages, and the session ids that lead to it. It is marked
    first, so that no searchable copy is written from then on; the copies go next, so that
    no search finds a message of a deleted conversation (an interrupted delete leaves
    messages nobody finds, and can be repeated)."""
    await repos.conversations.mark_deleting(conversation)
    messages = await repos.conversations.message_keys(conversation.conversation_id)
    await message_items.delete_copies(search, conversation.agent_id, messages)
    await repos.conversations.delete(conversation, messages)
