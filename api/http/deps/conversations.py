"""OwnedConversation: a conversation of the caller's, or 404."""

from typing import Annotated

from fastapi import Depends

from api.conversations import service
from api.conversations.models import Conversation
from api.http.deps.app import ReposDep
from api.http.deps.auth import CurrentUser


async def owned_conversation(
    conversation_id: str, user: CurrentUser, repos: ReposDep
) -> Conversation:
    return await service.get(repos, user.email, conversation_id)


OwnedConversation = Annotated[Conversation, Depends(owned_conversation)]
