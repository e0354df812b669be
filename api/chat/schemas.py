from pydantic import BaseModel, ConfigDict, Field

from api.messages.models import ID_PATTERN, MAX_PROMPT_CHARS


class ChatIn(BaseModel):
    """Seed 001's body. `user_id` is who authenticated, never what the body says: it may be
    sent (the seed's clients do) but must then name the caller."""

    model_config = ConfigDict(extra="forbid")

    agent_id: str = Field(min_length=1, max_length=64)
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)
    actor_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        pattern=ID_PATTERN,
        description="Who is speaking; the signed-in user when left out.",
    )
    session_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        pattern=ID_PATTERN,
        description="The conversation; `{user_id}_{agent_id}_default` when left out.",
    )
    user_id: str | None = Field(default=None, description="Optional; must be the caller.")
    stream: bool = Field(default=True, description="false: one JSON answer instead of SSE.")
