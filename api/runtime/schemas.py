"""A turn's answer as one JSON document, for clients that ask for no stream."""

from typing import Any, Literal

from pydantic import Field

from api.kit.model import ApiModel


class ToolUse(ApiModel):
    call_id: str
    name: str
    arguments: dict[str, Any]
    result: str | None


class TurnUsage(ApiModel):
    input_tokens: int
    output_tokens: int


class TurnOut(ApiModel):
    output: str
    run_id: str
    agent_id: str
    conversation_id: str
    session_id: str
    actor_id: str
    message_id: str | None
    steps: int
    tool_calls: list[ToolUse]
    memory_warnings: list[str]
    usage: TurnUsage
    reason: Literal["answer", "handoff"] = Field(
        default="answer",
        description="How the turn ended: `answer`, or `handoff` when the agent asked you a "
        "question with handoff_to_user (`output` is the question; the conversation awaits "
        "your answer)",
    )
