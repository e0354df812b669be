"""OpenAI's bodies and objects, as far as the endpoint reads or answers them. Requests take
the fields OpenAI clients send; those the endpoint does not use are ignored or refused by
`translate` (the table is in docs/openai-compatible.md), and any other field is ignored,
as clients send fields of newer API versions."""

from typing import Any, Literal

from pydantic import ConfigDict, Field

from api.kit.model import ApiModel

Role = Literal["system", "developer", "user", "assistant", "tool", "function"]


# Requests are read strictly, as OpenAI reads them: `"stream": 0` or `"n": "2"` is refused,
# not taken for false and 2.
class ContentPart(ApiModel):
    """A part of a message's content: `{"type": "text", "text": ...}` is the one we read."""

    model_config = ConfigDict(extra="ignore", strict=True)

    type: str
    text: str | None = None


class ChatCompletionMessageIn(ApiModel):
    """One message of the conversation as the client keeps it (name, tool calls and the
    like are ignored: only the last user message is read)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    role: Role
    content: str | list[ContentPart] | None = None


class StreamOptions(ApiModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    include_usage: bool = False


class ResponseFormat(ApiModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    type: str


class ChatCompletionIn(ApiModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    model: str = Field(
        min_length=1, max_length=256, description="One of your agents, by name or id."
    )
    messages: list[ChatCompletionMessageIn] = Field(
        min_length=1,
        description="The conversation as the client keeps it; only the last message, a "
        "user message, is new input. The agent remembers the rest itself.",
    )
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    user: str | None = Field(
        default=None,
        description="The session (conversation) of the agent; X-Session-Id overrides it.",
    )
    # Accepted and ignored: the agent's own provider settings decide.
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    # Ignored, refused where they would change the answer's form (translate.refuse_unsupported).
    n: int | None = Field(default=1, ge=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None


class AssistantMessage(ApiModel):
    role: Literal["assistant"] = "assistant"
    content: str
    refusal: None = None


class Choice(ApiModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"
    logprobs: None = None


class CompletionUsage(ApiModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(ApiModel):
    id: str = Field(description="`chatcmpl-` and the run's id (GET /runs/{run_id}).")
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str = Field(description="The model as the request named it.")
    choices: list[Choice]
    usage: CompletionUsage
    system_fingerprint: None = None


class ModelOut(ApiModel):
    """An agent as an OpenAI model object, with a few fields of ours."""

    id: str = Field(description="The agent's name: what `model` takes (its id works too).")
    object: Literal["model"] = "model"
    created: int
    owned_by: str
    agent_id: str
    provider: str
    provider_model: str


class ModelList(ApiModel):
    object: Literal["list"] = "list"
    data: list[ModelOut]


class ErrorDetail(ApiModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None
    request_id: str | None = Field(
        default=None, description="Ours: the request's id, as in its X-Request-ID header."
    )


class ErrorOut(ApiModel):
    """OpenAI's error body, which the OpenAI SDKs read."""

    error: ErrorDetail
