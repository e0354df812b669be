"""Between OpenAI's Chat Completions and our turns: a request becomes a /chat turn (the
prompt is the last user message, the session comes from `X-Session-Id` or `user`), and a
run's events become a `chat.completion` or its `chat.completion.chunk`s.

The client sees the agent's text and nothing else of the turn: memory tool calls, their
results and memory warnings are the agent's own business, never OpenAI tool calls. The
text of every step is kept (a model may say something before it calls a tool), a blank
line between steps, streamed or not alike."""

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from api.chat.schemas import ChatIn
from api.errors import AppError
from api.http.openai.errors import (
    InvalidValue,
    Unsupported,
    app_error_body,
    error_body,
)
from api.http.openai.schemas import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionIn,
    ChatCompletionMessageIn,
    Choice,
    CompletionUsage,
)
from api.journal import events

SESSION_HEADER = "X-Session-Id"
WAIT_HEADER = "X-Wait"
DONE = "[DONE]"
STEP_SEPARATOR = "\n\n"
# Stands for the agent until it is found: the turn's fields are checked before any read.
PENDING_AGENT = "pending"
TRUE = frozenset({"true", "1", "yes"})
FALSE = frozenset({"false", "0", "no"})


def refuse_unsupported(body: ChatCompletionIn) -> None:
    """What the endpoint cannot honour and would change the answer's form: refused, rather
    than answered as if it had been."""
    if body.n not in (None, 1):
        raise Unsupported("Only one choice is made: n must be 1.", param="n")
    if body.logprobs or body.top_logprobs:
        raise Unsupported("Log probabilities are not available from an agent.", param="logprobs")
    if body.response_format is not None and body.response_format.type != "text":
        raise Unsupported(
            'An agent answers in text: response_format must be {"type": "text"}.',
            param="response_format",
        )
    if body.tool_choice is not None and forces_a_tool(body.tool_choice):
        raise Unsupported(
            "An agent never calls the client's tools (it uses its own memory tools): "
            "tool_choice may not require one.",
            param="tool_choice",
        )


def forces_a_tool(choice: str | dict[str, Any]) -> bool:
    """`required`, a named function or custom tool, or allowed tools in `required` mode."""
    if isinstance(choice, str):
        return choice == "required"
    if choice.get("type") == "allowed_tools":
        allowed = choice.get("allowed_tools")
        return isinstance(allowed, dict) and allowed.get("mode") == "required"
    return True


def prompt_of(messages: Sequence[ChatCompletionMessageIn]) -> str:
    """The new input: the last message, which must be the user's and hold text."""
    index = len(messages) - 1
    last = messages[index]
    if last.role != "user":
        raise InvalidValue(
            "The last message must be the user's: it is the agent's new input (the agent "
            "remembers the conversation itself).",
            param=f"messages[{index}].role",
        )
    content = last.content
    if isinstance(content, str):
        return content
    param = f"messages[{index}].content"
    if not content:
        raise InvalidValue("The last user message has no content.", param=param)
    texts = []
    for number, part in enumerate(content):
        if part.type != "text" or part.text is None:
            raise Unsupported(
                f"An agent reads text only; this part is {part.type!r}.",
                param=f"{param}[{number}]",
            )
        texts.append(part.text)
    return "\n".join(texts)


def wait_of(value: str | None) -> bool:
    """X-Wait: a busy conversation is waited for (up to 60 s) unless it says false."""
    if value is None or value.strip().lower() in TRUE:
        return True
    if value.strip().lower() in FALSE:
        return False
    raise InvalidValue(f"{WAIT_HEADER} is true or false.", param=WAIT_HEADER)


def turn_of(body: ChatCompletionIn, session_header: str | None, wait: str | None) -> ChatIn:
    """The /chat turn the request asks for, for an agent still to be found (`agent_id` is
    set once it is). The actor is the caller."""
    refuse_unsupported(body)
    session, source = (
        (session_header, SESSION_HEADER) if session_header is not None else (body.user, "user")
    )
    try:
        return ChatIn(
            agent_id=PENDING_AGENT,
            prompt=prompt_of(body.messages),
            session_id=session,
            stream=bool(body.stream),
            wait=wait_of(wait),
        )
    except ValidationError as e:
        error = e.errors()[0]
        field_name = error["loc"][0] if error["loc"] else ""
        if field_name == "session_id":
            raise InvalidValue(
                f"Not a session id: {error['msg']} (1 to 256 characters, no control characters).",
                param=source,
            ) from None
        raise InvalidValue(
            f"The last user message: {error['msg']}.",
            param=f"messages[{len(body.messages) - 1}].content",
        ) from None


@dataclass
class Transcript:
    """The agent's text across the steps of its turn, as the client gets it."""

    step: int | None = None  # the step of the last text
    pieces: list[str] = field(default_factory=list)

    def add(self, delta: events.TextDelta) -> str:
        """The piece to send for `delta`: its text, after a blank line if an earlier step
        said something."""
        text = delta.text
        if not text:
            return ""
        if self.pieces and delta.step != self.step:
            text = STEP_SEPARATOR + text
        self.step = delta.step
        self.pieces.append(text)
        return text

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def usage_of(completed: events.RunCompleted) -> CompletionUsage:
    usage = completed.usage
    return CompletionUsage(
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
    )


@dataclass(frozen=True)
class Completion:
    """One turn as OpenAI names it: `chatcmpl-{run_id}`, its time, the model as asked."""

    id: str
    created: int
    model: str

    @classmethod
    def of(cls, run_id: str, created: float, model: str) -> "Completion":
        return cls(f"chatcmpl-{run_id}", int(created), model)

    def answer(self, found: Sequence[events.RunEvent]) -> ChatCompletion:
        """A finished run's events as one `chat.completion`."""
        transcript = Transcript()
        completed: events.RunCompleted | None = None
        for event in found:
            if isinstance(event, events.TextDelta):
                transcript.add(event)
            elif isinstance(event, events.RunCompleted):
                completed = event
        if completed is None:  # the run broke off (the server is shutting down)
            raise AppError("The turn stopped before it finished.")
        return ChatCompletion(
            id=self.id,
            created=self.created,
            model=self.model,
            choices=[Choice(message=AssistantMessage(content=transcript.text))],
            usage=usage_of(completed),
        )

    def chunk(
        self,
        delta: dict[str, str],
        finish_reason: str | None = None,
        *,
        include_usage: bool,
    ) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if include_usage:  # as OpenAI does: null on every chunk but the last
            chunk["usage"] = None
        return chunk

    async def chunks(
        self,
        produced: AsyncGenerator[events.RunEvent, None],
        failure: Callable[[], AppError | None],
        *,
        include_usage: bool,
    ) -> AsyncIterator[bytes]:
        """A run's events as OpenAI streams a completion: the role, the text, the finish
        (and the usage when asked), then `[DONE]`; or, when the turn fails, an error.
        `failure` tells why it failed, once it has."""
        transcript = Transcript()
        async with contextlib.aclosing(produced) as run:
            async for event in run:
                if isinstance(event, events.RunStarted):
                    first = {"role": "assistant", "content": ""}
                    yield sent(self.chunk(first, include_usage=include_usage))
                elif isinstance(event, events.TextDelta):
                    text = transcript.add(event)
                    if text:
                        yield sent(self.chunk({"content": text}, include_usage=include_usage))
                elif isinstance(event, events.RunCompleted):
                    yield sent(self.chunk({}, "stop", include_usage=include_usage))
                    if include_usage:
                        last = self.chunk({}, include_usage=False)
                        last["choices"] = []
                        last["usage"] = usage_of(event).model_dump()
                        yield sent(last)
                    yield event_of(DONE)
                elif isinstance(event, events.RunError):
                    yield sent(stream_error(event, failure()))


def stream_error(event: events.RunError, failure: AppError | None) -> dict[str, Any]:
    """A failure after the stream began, as OpenAI sends one: `data: {"error": {...}}`."""
    if failure is not None:
        return app_error_body(failure)
    return error_body(500, event.code, event.message)


def sent(data: dict[str, Any]) -> bytes:
    return event_of(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def event_of(data: str) -> bytes:
    """An event of `data` alone. `data` is on one line (json.dumps escapes line breaks
    inside strings), so it needs no splitting into several `data:` lines."""
    return f"data: {data}\r\n\r\n".encode()
