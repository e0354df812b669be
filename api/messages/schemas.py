"""What a client sends to start a turn, shared by the routes that run one."""

from typing import Annotated

from pydantic import Field

# Actor and session ids as clients may send them: printable text, as they end up in keys,
# logs and prompts, where control characters do harm.
ID_PATTERN = r"^[^\x00-\x1f\x7f]+$"

Prompt = Annotated[str, Field(min_length=1, max_length=32_000)]
ActorId = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=256,
        pattern=ID_PATTERN,
        description="Who is speaking; the signed-in user when left out.",
    ),
]
Streamed = Annotated[bool, Field(description="false: one JSON answer instead of SSE.")]
