"""OwnedConversation: a conversation of the caller's, or 404."""

from typing import Annotated

from fastapi import Depends

from api.conversations import service
from api.conversations.models import Conversation
from api.http.deps.app import TableDep
from api.http.deps.auth import CurrentUser


async def owned_conversation(
    conversation_id: str, user: CurrentUser, table: TableDep
) -> Conversation:
    return await service.get(table, user.email, conversation_id)


OwnedConversation = Annotated[Conversation, Depends(owned_conversation)]
