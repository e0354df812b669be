from pydantic import ConfigDict, Field, field_validator

from api.conversations.messages.schemas import ID_PATTERN, ActorId, Prompt, Streamed, Wait
from api.kit.model import ApiModel

# A session id ends up in a sort key, and DynamoDB takes at most 1024 bytes there.
MAX_SESSION_ID_BYTES = 512


class ChatIn(ApiModel):
    """Seed 001's body. `user_id` is who authenticated, never what the body says: it may be
    sent (the seed's clients do) but must then name the caller."""

    model_config = ConfigDict(extra="forbid")

    agent_id: str = Field(
        min_length=1,
        max_length=100,  # a name's longest
        description="The agent's id or, as GET /agents/{name} and MCP take it, its name",
    )
    prompt: Prompt
    actor_id: ActorId = None
    session_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        pattern=ID_PATTERN,
        description="The conversation; `{user_id}_{agent_id}_default` when left out.",
    )
    user_id: str | None = Field(default=None, description="Optional; must be the caller.")
    stream: Streamed = True
    wait: Wait = False

    @field_validator("session_id")
    @classmethod
    def _fits_a_key(cls, session_id: str | None) -> str | None:
        if session_id is not None and len(session_id.encode()) > MAX_SESSION_ID_BYTES:
            raise ValueError(f"at most {MAX_SESSION_ID_BYTES} bytes of UTF-8")
        return session_id
