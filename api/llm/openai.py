"""OpenAI's Chat Completions wire format, through the official SDK (AsyncOpenAI): OpenAI
itself, and any compatible server (Ollama, vLLM, LM Studio, OpenRouter, Gemini's
OpenAI-compatible endpoint) through `base_url`."""

import contextlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI, RequestOptions

from api.kit.tls import shared_ssl_context
from api.llm.errors import (
    ProviderAuthFailed,
    ProviderError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
    brief,
)
from api.llm.http import refused
from api.llm.types import (
    ChatMessage,
    ChatRequest,
    Finish,
    FinishReason,
    LLMEvent,
    TextDelta,
    ToolCallEvent,
    ToolSpec,
    Usage,
)
from api.llm.wire import tool_call

log = logging.getLogger(__name__)


# The API key, as `chat.completions.create` sends it (the client's default adds the admin
# key's scheme too).
STREAMED: RequestOptions = {"security": {"bearer_auth": True}}

FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


def to_wire_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            wire.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            wire.append(
                {
                    "role": "assistant",
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": json.dumps(dict(c.arguments)),
                            },
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        else:
            wire.append({"role": m.role, "content": m.content})
    return wire


def to_wire_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in tools
    ]


def _said(e: openai.APIStatusError) -> str:
    """The provider's own error message, only from a JSON error body: anything else (an
    HTML page, a server's body behind a redirect) is not repeated to the user."""
    body = e.body
    message = body.get("message") if isinstance(body, dict) else None
    return f": {brief(message)}" if isinstance(message, str) and message else ""


def provider_error(label: str, e: Exception) -> ProviderError:
    """The typed error for an exception of the openai SDK or its HTTP client."""
    if isinstance(e, openai.AuthenticationError | openai.PermissionDeniedError):
        return ProviderAuthFailed(f"{label} refused the API key ({e.status_code}); check it.")
    if isinstance(e, openai.RateLimitError):
        return ProviderRateLimited(f"{label} is rate limiting this key; retried, then gave up.")
    if isinstance(e, openai.APITimeoutError) and not refused(e):
        return ProviderTimeout(f"{label} did not answer in time.")
    if isinstance(e, openai.APIConnectionError):
        return ProviderUnavailable(f"{label} cannot be reached.")
    if isinstance(e, openai.APIStatusError):
        if e.status_code >= 500:
            return ProviderUnavailable(f"{label} failed ({e.status_code}){_said(e)}")
        if 300 <= e.status_code < 400:
            return ProviderRejected(f"{label} answered with a redirect, which is not followed.")
        return ProviderRejected(f"{label} refused the request ({e.status_code}){_said(e)}")
    if isinstance(e, httpx2.TimeoutException):
        return ProviderTimeout(f"{label} did not answer in time.")
    if isinstance(e, httpx2.TransportError):
        return ProviderUnavailable(f"{label} dropped the connection.")
    return ProviderError(f"{label} failed.")


async def json_chunks(response: httpx2.Response) -> AsyncGenerator[object, None]:
    """A streamed completion's events as the JSON objects they carry, read from the raw
    response's bytes here: the SDK's stream makes an object per line and per event and
    goes through two more generators per chunk, and its chunk models cost about six times
    as much to build as the dicts (bench/turn.py's CPU), about as much CPU as the rest of
    the chunk's way to the client (bench/load.py). An error sent inside the stream is
    raised as the SDK raises it; the body is read to its end after `[DONE]`, as the SDK
    does, so that the connection goes back to the pool; the response is closed when this
    ends or is closed."""
    pending = b""
    done = False
    try:
        async for received in response.aiter_bytes():
            if done:
                continue
            pending += received
            if b"\r" in pending:  # SSE allows CR LF and CR too; a CR last may start a CR LF
                held = pending.endswith(b"\r")
                body = pending[:-1] if held else pending
                pending = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
                pending += b"\r" if held else b""
            *events, pending = pending.split(b"\n\n")
            for event in events:
                data = _event_data(event)
                if data is None:
                    continue
                if data.startswith(b"[DONE]"):
                    done = True
                    break
                chunk = json.loads(data)
                if isinstance(chunk, dict) and chunk.get("error"):
                    error = chunk["error"]
                    said = error.get("message") if isinstance(error, dict) else None
                    raise openai.APIError(
                        said if isinstance(said, str) and said else "An error occurred",
                        request=response.request,
                        body=error,
                    )
                yield chunk
    finally:
        await response.aclose()


def _event_data(event: bytes) -> bytes | None:
    """The data of one event (its `data:` lines joined), None when it has none."""
    if event.startswith(b"data: ") and b"\n" not in event:  # what providers send
        return event[6:]
    lines = [
        line[6:] if line.startswith(b"data: ") else line[5:]
        for line in event.split(b"\n")
        if line.startswith(b"data:")
    ]
    return b"\n".join(lines) if lines else None


def _slot(calls: dict[int, dict[str, str]], index: int | None, call_id: str | None) -> int:
    """Where a tool-call fragment belongs: its index, or, from servers that send none
    (Gemini's compatible endpoint), a new slot whenever a new call id starts."""
    if index is not None:
        return index
    if call_id and not any(c["id"] == call_id for c in calls.values()):
        return len(calls)
    return max(calls, default=0)


class OpenAIProvider:
    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        organization: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        self._secrets = tuple(s for s in (api_key, organization) if s)
        self.label = "OpenAI" if base_url is None else "The OpenAI-compatible server"
        # OpenAI's newer models refuse `max_tokens`; compatible servers know only it.
        self._max_tokens_name = "max_completion_tokens" if base_url is None else "max_tokens"
        self._client = AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            organization=organization,
            timeout=timeout,
            max_retries=max_retries,
            # A redirect could lead past the URL guard to an internal address.
            http_client=openai.DefaultAioHttpClient(
                follow_redirects=False, verify=shared_ssl_context()
            ),
        )

    @property
    def name(self) -> str:
        return "openai"

    async def stream(self, request: ChatRequest) -> AsyncIterator[LLMEvent]:
        params: dict[str, Any] = {
            "model": request.model,
            "messages": to_wire_messages(request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            self._max_tokens_name: request.params.max_tokens,
        }
        if request.tools:
            params["tools"] = to_wire_tools(request.tools)
        if request.params.temperature is not None:
            params["temperature"] = request.params.temperature
        # Tool calls arrive as fragments (see _slot); each is emitted once complete.
        calls: dict[int, dict[str, str]] = {}
        finish: FinishReason = "stop"
        try:
            # The client's generic `post` (the SDK's documented way to a raw response): the
            # request is built in wire form already, and `create` would spend 1 to 3 ms
            # walking it against its TypedDicts. The SDK still makes the request (auth,
            # retries, the errors before the stream); the stream is read by json_chunks.
            response = await self._client.post(
                "/chat/completions",
                body=params,
                cast_to=httpx2.Response,
                options=STREAMED,
                stream=True,
            )
            # Leaving the block closes the response: a consumer that stops early (a client
            # gone) ends the provider's work too.
            async with contextlib.aclosing(json_chunks(response)) as chunks:
                async for chunk in chunks:
                    if not isinstance(chunk, dict):  # not a chunk at all: nothing to read
                        log.warning("%s sent a stream event that is not an object", self.label)
                        continue
                    usage = chunk.get("usage")
                    if usage:
                        yield Usage(
                            usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
                        )
                    for choice in chunk.get("choices") or ():
                        delta = choice.get("delta") or {}
                        if content := delta.get("content"):
                            yield TextDelta(content)
                        for part in delta.get("tool_calls") or ():
                            part_id = part.get("id")
                            slot = _slot(calls, part.get("index"), part_id)
                            call = calls.setdefault(slot, {"id": "", "name": "", "args": ""})
                            call["id"] = part_id or call["id"]
                            function = part.get("function") or {}
                            call["name"] = function.get("name") or call["name"]
                            call["args"] += function.get("arguments") or ""
                        if (reason := choice.get("finish_reason")) is not None:
                            finish = FINISH.get(reason, "other")
        except (openai.OpenAIError, httpx2.HTTPError) as e:
            raise provider_error(self.label, e).scrubbed(self._secrets) from e
        if calls and finish == "stop":
            finish = "tool_calls"  # some compatible servers say "stop" after tool calls
        for index in sorted(calls):
            call = calls[index]
            yield ToolCallEvent(tool_call(call["id"], call["name"], call["args"]))
        yield Finish(finish)

    async def aclose(self) -> None:
        await self._client.close()

    async def list_models(self) -> list[str]:
        try:
            return sorted([model.id async for model in self._client.models.list()])
        except (openai.OpenAIError, httpx2.HTTPError) as e:
            raise provider_error(self.label, e).scrubbed(self._secrets) from e
