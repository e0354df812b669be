"""What a client sends to start a turn, shared by the routes that run one."""

from datetime import datetime
from typing import Annotated

from pydantic import Field

from api.conversations.messages.service import MessageHit, Turn
from api.kit.model import ApiModel
from api.search.index import Mode

# Actor and session ids as clients may send them: printable text, as they end up in keys,
# logs and prompts, where control characters do harm.
ID_PATTERN = r"^[^\x00-\x1f\x7f]+$"

MAX_PROMPT_CHARS = 32_000
Prompt = Annotated[str, Field(min_length=1, max_length=MAX_PROMPT_CHARS)]
ActorId = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=256,
        pattern=ID_PATTERN,
        description="Who is speaking; the signed-in user when left out.",
    ),
]
Streamed = Annotated[bool, Field(strict=True, description="false: one JSON answer instead of SSE.")]
MAX_WAIT_SECONDS = 60.0
Wait = Annotated[
    bool,
    Field(
        strict=True,
        description="true: when another turn runs in the conversation, wait for it to end "
        f"(up to {int(MAX_WAIT_SECONDS)} seconds) instead of answering 409.",
    ),
]


class ContextTurnOut(ApiModel):
    id: str
    role: str
    content: str
    created_at: datetime

    @classmethod
    def of(cls, turn: Turn | None) -> "ContextTurnOut | None":
        if turn is None:
            return None
        return cls(
            id=turn.message_id, role=turn.role, content=turn.content, created_at=turn.created_at
        )


class MessageHitOut(ApiModel):
    id: str
    conversation_id: str
    role: str
    content: str
    actor_id: str | None
    interrupted: bool
    created_at: datetime
    score: float = Field(description="What the mode ranks by: fused (hybrid), BM25 or cosine.")
    similarity: float | None = Field(
        description="Cosine similarity to the query; null when lexical or without a vector."
    )
    before: ContextTurnOut | None = Field(
        default=None,
        description="The message before this one in its conversation, for context (not a match).",
    )
    after: ContextTurnOut | None = Field(
        default=None,
        description="The message after this one in its conversation, for context (not a match).",
    )

    @classmethod
    def of(cls, hit: MessageHit) -> "MessageHitOut":
        return cls(
            id=hit.message_id,
            conversation_id=hit.conversation_id,
            role=hit.role,
            content=hit.content,
            actor_id=hit.actor_id,
            interrupted=hit.interrupted,
            created_at=hit.created_at,
            score=hit.score,
            similarity=hit.similarity,
            before=ContextTurnOut.of(hit.before),
            after=ContextTurnOut.of(hit.after),
        )


class MessageSearchOut(ApiModel):
    query: str
    total: int = Field(description="Every match, not only those returned.")
    mode: Mode
    messages: list[MessageHitOut] = Field(default_factory=list)
