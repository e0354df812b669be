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


class TurnContextItemOut(ApiModel):
    name: str = Field(
        description="A block's label, a message's role (`user`, `assistant`), a recalled "
        "source's kind (`memory`, `message`, `passage`) or a tool's name"
    )
    text: str = Field(
        description="What the model reads of it (a tool: its JSON spec; a recalled item: "
        "the start of it, as the turn's record of what it used keeps it)"
    )
    tokens: int
    id: str | None = Field(default=None, description="A message's or a memory's id")
    via: str | None = Field(default=None, description="How a recalled item came in")


class TurnContextPartOut(ApiModel):
    name: Literal["system", "blocks", "recent_turns", "recalled", "message", "tools"]
    tokens: int = Field(
        description="Its share of `total_tokens`; `system` counts the system message less "
        "the blocks, recent turns and recalled items it holds, which have parts of their own"
    )
    count: int = Field(description="How many items it has")
    text: str = Field(description="What the model reads of it (`blocks`: see its items)")
    items: list[TurnContextItemOut]


class TurnContextOut(ApiModel):
    agent_id: str
    session_id: str | None
    provider: str
    model: str
    architecture: str
    prompt_known: bool = Field(
        description="false for an architecture that tells its prompt only as its turn runs: "
        "the system prompt and the blocks are then not shown"
    )
    parts: list[TurnContextPartOut]
    total_tokens: int = Field(description="The parts' tokens added up")
    estimated: bool = Field(
        description="true: tokens are estimated (characters / 4, rounded up, per part), "
        "not counted by the model's tokenizer"
    )
    context_window: int | None = Field(
        description="The model's window in tokens; null when this server does not know it"
    )
    percent_used: float | None = Field(
        description="total_tokens as a percentage of context_window; null when unknown"
    )
