"""/conversations: a user's conversations with their agents, and their messages."""

from typing import Annotated, Literal

from fastapi import Header, Query, status
from fastapi.responses import Response

from api.agents import service as agents
from api.agents.service import AgentNotFound
from api.conversations import service
from api.conversations.schemas import (
    ConversationCreate,
    ConversationOut,
    ConversationPage,
    ConversationUpdate,
    MessageOut,
    MessagePage,
    TurnIn,
)
from api.conversations.service import ConversationNotFound
from api.http.contract import streams
from api.http.contract.errors import errors
from api.http.deps.app import ClockDep, ReposDep, SearchDep, SettingsDep
from api.http.deps.auth import CurrentUser
from api.http.deps.conversations import OwnedConversation
from api.http.deps.runtime import RuntimeDep
from api.http.responses import IdempotencyKey, respond
from api.http.route_filter import Router
from api.runtime.request import TurnRequest
from api.runtime.runner import TURN_FAILURES
from api.store.table import InvalidCursor

router = Router(prefix="/conversations", tags=["conversations"])
Limit = Annotated[int, Query(ge=1, le=100)]


@router.post(
    "",
    operation_id="conversations_create",
    status_code=status.HTTP_201_CREATED,
    responses=errors(AgentNotFound),
)
async def create_conversation(
    body: ConversationCreate, user: CurrentUser, repos: ReposDep, clock: ClockDep
) -> ConversationOut:
    agent = await agents.get(repos, user.email, body.agent_id)
    return ConversationOut.of(await service.create(repos, agent, body.title, clock))


@router.get("", operation_id="conversations_list", responses=errors(AgentNotFound, InvalidCursor))
async def list_conversations(
    user: CurrentUser,
    repos: ReposDep,
    agent_id: Annotated[str, Query(min_length=1)],
    limit: Limit = 20,
    cursor: str | None = None,
) -> ConversationPage:
    """An agent's conversations, the latest active first (`last_activity_at`: a turn's end
    moves its conversation to the top). The cursor continues from the last listed one's
    place: a conversation that moves up meanwhile is not listed again on later pages."""
    agent = await agents.get(repos, user.email, agent_id)
    found, next_cursor = await repos.conversations.list_for_agent(
        agent.agent_id, limit=limit, cursor=cursor
    )
    return ConversationPage(
        conversations=[ConversationOut.of(c) for c in found], cursor=next_cursor
    )


@router.get(
    "/{conversation_id}", operation_id="conversations_get", responses=errors(ConversationNotFound)
)
async def get_conversation(conversation: OwnedConversation) -> ConversationOut:
    return ConversationOut.of(conversation)


@router.patch(
    "/{conversation_id}",
    operation_id="conversations_rename",
    responses=errors(ConversationNotFound),
)
async def rename_conversation(
    conversation: OwnedConversation,
    body: ConversationUpdate,
    repos: ReposDep,
    clock: ClockDep,
) -> ConversationOut:
    return ConversationOut.of(await service.rename(repos, conversation, body.title, clock))


@router.delete(
    "/{conversation_id}",
    operation_id="conversations_delete",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=errors(ConversationNotFound),
)
async def delete_conversation(
    conversation: OwnedConversation, repos: ReposDep, search: SearchDep
) -> None:
    """The conversation and its messages."""
    await service.delete(repos, search, conversation)


@router.get(
    "/{conversation_id}/messages",
    operation_id="conversations_list_messages",
    responses=errors(ConversationNotFound, InvalidCursor),
)
async def list_messages(
    conversation: OwnedConversation,
    repos: ReposDep,
    limit: Limit = 50,
    cursor: str | None = None,
    order: Annotated[
        Literal["oldest", "newest"],
        Query(description="newest: the latest messages first, the cursor going back in time"),
    ] = "oldest",
) -> MessagePage:
    """Messages in order, oldest first (or newest first); the cursor continues in the same
    order (a cursor of the other order is 400 invalid_cursor)."""
    read = repos.messages.newest_first if order == "newest" else repos.messages.oldest_first
    found, next_cursor = await read(conversation.conversation_id, limit=limit, cursor=cursor)
    return MessagePage(messages=[MessageOut.of(m) for m in found], cursor=next_cursor)


@router.post(
    "/{conversation_id}/messages",
    operation_id="conversations_send_message",
    response_model=None,
    responses={**streams.turn(), **errors(ConversationNotFound, *TURN_FAILURES)},
)
async def send_message(
    conversation: OwnedConversation,
    body: TurnIn,
    runtime: RuntimeDep,
    settings: SettingsDep,
    accept: Annotated[str | None, Header()] = None,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Run one turn: the message, the agent's reply and its tool calls, streamed as
    Server-Sent Events (docs/sse.md) unless `stream` is false or the client accepts only
    JSON. Every message is stored as it happens."""
    prepared = await runtime.prepare(
        TurnRequest.in_conversation(conversation, body.content, body.actor_id), wait=body.wait
    )
    return await respond(
        prepared,
        stream=body.stream,
        accept=accept,
        settings=settings,
        resumable=idempotency_key is not None,
    )
