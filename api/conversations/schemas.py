from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field, JsonValue

from api.conversations.messages.models import Message
from api.conversations.messages.schemas import ActorId, Prompt, Streamed, Wait
from api.conversations.models import Conversation
from api.kit.model import ApiModel
from api.kit.text import Title


class ConversationCreate(ApiModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: str = Field(min_length=1, max_length=64)
    title: Title = Field(default="", max_length=200)


class TurnIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    content: Prompt
    actor_id: ActorId = None
    stream: Streamed = True
    wait: Wait = False


class ConversationUpdate(ApiModel):
    model_config = ConfigDict(extra="forbid")

    title: Title = Field(max_length=200)


class ConversationOut(ApiModel):
    id: str
    agent_id: str
    session_id: str = Field(
        description="The session id that leads to it (POST /chat's `session_id`): its own id "
        "unless a client's session opened it"
    )
    title: str
    created_at: datetime
    updated_at: datetime = Field(description="Its last change: a turn's end, or a new title")
    last_activity_at: datetime = Field(
        description="When its last turn ended, or messages were last stored in it (its "
        "creation before any): the order of GET /conversations, latest first"
    )

    awaiting_user: bool = Field(
        description="Its last turn ended with a question for the person (handoff_to_user): "
        "it waits for their answer, the next message; false again once a turn ends after it"
    )

    @classmethod
    def of(cls, c: Conversation) -> "ConversationOut":
        return cls(
            id=c.conversation_id,
            agent_id=c.agent_id,
            session_id=c.session_id or c.conversation_id,
            title=c.title,
            created_at=c.created_at,
            updated_at=c.updated_at,
            last_activity_at=c.active_at,
            awaiting_user=c.awaiting_user,
        )


class ConversationPage(ApiModel):
    conversations: list[ConversationOut]
    cursor: str | None


class MessageOut(ApiModel):
    id: str
    role: str
    content: str
    actor_id: str | None
    tool_calls: list[dict[str, Any]]
    tool_call_id: str | None
    interrupted: bool
    metadata: dict[str, JsonValue] | None = Field(
        default=None, description="What the client stored with it (seed 002's POST /messages)"
    )
    run_id: str | None = Field(
        default=None,
        description="The turn that made it, for `GET /runs/{run_id}` (what the turn used); "
        "none for a message stored outside a turn",
    )
    created_at: datetime

    @classmethod
    def of(cls, m: Message) -> "MessageOut":
        return cls(
            id=m.message_id,
            role=m.role,
            content=m.content,
            actor_id=m.actor_id,
            tool_calls=m.tool_calls,
            tool_call_id=m.tool_call_id,
            interrupted=m.interrupted,
            metadata=m.metadata,
            run_id=m.run_id,
            created_at=m.created_at,
        )


class MessagePage(ApiModel):
    messages: list[MessageOut]
    cursor: str | None
