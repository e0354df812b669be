"""Provider-neutral messages, tools and stream events: what the runtime and every adapter
share. Adapters translate these to and from their provider's wire format."""

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]
FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "other"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: Mapping[str, Any]
    # Why the model's arguments could not be used (not JSON, not an object, too large):
    # the call is answered with this, for the model to correct, and stored without them.
    problem: str | None = None


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # role "tool": the call this message answers


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the LLM sees it: name, description and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int = 1024
    temperature: float | None = None


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    """A tool call whose arguments arrived complete and parsed."""

    call: ToolCall


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Finish:
    reason: FinishReason


LLMEvent = TextDelta | ToolCallEvent | Usage | Finish


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: Sequence[ChatMessage]
    tools: Sequence[ToolSpec] = ()
    params: GenerationParams = field(default_factory=GenerationParams)


class LLMProvider(Protocol):
    """One provider, already holding its credentials."""

    @property
    def name(self) -> str: ...

    def stream(self, request: ChatRequest) -> AsyncIterator[LLMEvent]:
        """The reply as it is produced: text deltas, complete tool calls, usage, and a
        Finish last. Failures raise ProviderError subclasses; the request is not changed."""
        ...

    async def list_models(self) -> list[str]: ...

    async def aclose(self) -> None:
        """Release the connections it holds; it is not used again."""
        ...
