"""Fake OpenAI and Anthropic servers: fake outside services, for tests only.

The model providers are outside services the test suite must never reach, so these stand
in for them. Each serves real HTTP on 127.0.0.1 from a background thread and speaks the
provider's real wire format, so the official `openai` and `anthropic` SDKs, given the
fake's `base_url`, run unchanged: streamed Server-Sent Events included, and the SDKs' own
stream accumulators rebuild text, tool calls and usage from them.

A test scripts the replies; each request to the completion endpoint takes the next one:

    with start_fake_openai() as llm:
        llm.replies.append(Reply(tool_calls=[ToolCallScript("search", '{"q": "x"}')]))
        client = AsyncOpenAI(base_url=llm.base_url, api_key="k", max_retries=0)

    with start_fake_anthropic() as llm:
        client = AsyncAnthropic(base_url=llm.base_url, api_key="k", max_retries=0)

Knobs on `Reply` make a reply fail (a provider error body with its status code and an
optional Retry-After), arrive late (`delay_seconds`, for timeouts) or stop mid-stream and
hang until the client goes away (`stall_after_chunks`, for cancellation; the fake counts
those in `FakeLLM.disconnects`), or break the connection off (`drop_after_chunks`). Both
fakes require the credentials header the SDK sends and answer the key "bad-key" with the
provider's 401.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tests.fakes.serving import serve_in_thread

BAD_KEY = "bad-key"
DISCONNECT_POLL_SECONDS = 0.05
MAX_STALL_SECONDS = 30.0
ANTHROPIC_VERSION_HEADER = "anthropic-version"
DEFAULT_OPENAI_MODELS = ["gpt-5.4-mini", "gpt-5.4"]
DEFAULT_ANTHROPIC_MODELS = ["claude-sonnet-4-6", "claude-haiku-4-5"]
# A fixed, plausible creation time for listed models: the SDKs only need a valid value.
MODEL_CREATED = 1_715_367_049
MODEL_CREATED_AT = "2024-05-10T18:50:49Z"


@dataclass
class ToolCallScript:
    """One tool call in a scripted reply."""

    name: str
    # The raw JSON argument string, sent byte for byte; it may be deliberately malformed.
    arguments: str
    # The argument string is streamed split into this many pieces (fewer if it is shorter).
    fragments: int = 3
    # Generated in the provider's style ("call_...", "toolu_...") when None.
    id: str | None = None


@dataclass
class Reply:
    """One scripted model reply, the answer to one HTTP request."""

    # Streamed in several deltas, one per word (with the whitespace before it).
    text: str = ""
    tool_calls: list[ToolCallScript] = field(default_factory=list)
    input_tokens: int = 10
    output_tokens: int = 5
    # Finish/stop reason; default: "tool_calls"/"tool_use" with tool calls, else
    # "stop"/"end_turn".
    stop: str | None = None
    # Anything but 200 answers with the provider's JSON error body and this status.
    status: int = 200
    error_message: str = "error injected by the fake provider"
    # Sent as the Retry-After header on an error.
    retry_after: float | None = None
    # Waited before answering at all (ends early if the client goes away).
    delay_seconds: float = 0.0
    # Waited between streamed chunks: a model that takes its time.
    chunk_delay_seconds: float = 0.0
    # Stream this many chunks (SSE events; OpenAI's [DONE] and Anthropic's ping count),
    # then hang until the client disconnects, at most MAX_STALL_SECONDS, after which the
    # response ends there, truncated. A non-streamed request with this set hangs the
    # same way before any response.
    stall_after_chunks: int | None = None
    # Stream this many chunks, then break the connection off mid-response: a provider
    # failing mid-stream.
    drop_after_chunks: int | None = None
    # OpenAI only: send the tool calls' deltas round-robin (all first deltas, then each
    # call's first fragment, ...) instead of one call after the other. The real API
    # sends them one after the other, and Anthropic's blocks never interleave.
    interleave_tool_calls: bool = False


@dataclass
class FakeLLM:
    """The running fake's address and state; a test may change its fields at any time."""

    # What the SDK gets as base_url (OpenAI: ".../v1"; Anthropic: the root, the SDK adds /v1).
    base_url: str
    # Consumed one per completion request; when empty, the answer is Reply(text="ok").
    replies: list[Reply] = field(default_factory=list)
    # Every JSON body received by the completion endpoint, in order, rejected ones too.
    requests: list[dict[str, Any]] = field(default_factory=list)
    # When each of those requests arrived (time.perf_counter, comparable within the process).
    request_times: list[float] = field(default_factory=list)
    # The headers of those same requests, lower-cased names, in the same order.
    request_headers: list[dict[str, str]] = field(default_factory=list)
    # How many responses ended because the client went away.
    disconnects: int = 0
    # Served by the models listing endpoint.
    models: list[str] = field(default_factory=list)

    def next_reply(self) -> Reply:
        return self.replies.pop(0) if self.replies else Reply(text="ok")


def _new_id(prefix: str, length: int = 24) -> str:
    return prefix + secrets.token_hex(length // 2 + 1)[:length]


def text_deltas(text: str) -> list[str]:
    """Split text on word boundaries, each piece keeping the whitespace before it."""
    pieces: list[str] = re.findall(r"\s*\S+(?:\s+\Z)?", text)
    return pieces or ([text] if text else [])


def argument_fragments(arguments: str, fragments: int) -> list[str]:
    """Split a string into `fragments` nearly equal pieces, fewer if it is shorter."""
    count = max(1, min(fragments, len(arguments)))
    size, extra = divmod(len(arguments), count)
    pieces: list[str] = []
    start = 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        pieces.append(arguments[start:end])
        start = end
    return pieces


def _json(data: object) -> str:
    return json.dumps(data, separators=(",", ":"))


def _retry_headers(reply: Reply) -> dict[str, str]:
    return {} if reply.retry_after is None else {"retry-after": f"{reply.retry_after:g}"}


async def _wait_for_disconnect(request: Request, limit: float) -> bool:
    """Wait up to `limit` seconds; True as soon as the client has gone away."""
    deadline = time.monotonic() + limit
    while True:
        if await request.is_disconnected():
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(DISCONNECT_POLL_SECONDS, remaining))


class _EventStream(StreamingResponse):
    """An SSE response sent chunk by chunk, with no task of its own reading `receive`.

    Starlette's StreamingResponse listens for the disconnect itself under uvicorn and
    cancels the body, which would race the fake's own disconnect detection.
    """

    def __init__(self, events: AsyncIterator[bytes], headers: dict[str, str]) -> None:
        super().__init__(
            events,
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", **headers},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        async for chunk in self.body_iterator:
            body = chunk if isinstance(chunk, bytes) else str(chunk).encode("utf-8")
            await send({"type": "http.response.body", "body": body, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class ConnectionDropped(Exception):
    """Raised inside a response body: uvicorn aborts the connection mid-response."""


async def _paced(
    request: Request, fake: FakeLLM, events: list[bytes], reply: Reply
) -> AsyncIterator[bytes]:
    stall_after = reply.stall_after_chunks
    for sent, event in enumerate(events if stall_after is None else events[:stall_after]):
        if sent == reply.drop_after_chunks:
            raise ConnectionDropped("the fake provider broke the stream off")
        yield event
        if await request.is_disconnected():
            fake.disconnects += 1
            return
        if reply.chunk_delay_seconds:
            await asyncio.sleep(reply.chunk_delay_seconds)
    if stall_after is not None and await _wait_for_disconnect(request, MAX_STALL_SECONDS):
        fake.disconnects += 1


async def _read_json(request: Request) -> dict[str, Any] | None:
    try:
        body = await request.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _record(fake: FakeLLM, request: Request, body: dict[str, Any]) -> None:
    fake.request_times.append(time.perf_counter())
    fake.requests.append(body)
    fake.request_headers.append({name.lower(): value for name, value in request.headers.items()})


async def _before_answer(request: Request, fake: FakeLLM, reply: Reply, stream: bool) -> bool:
    """Apply the reply's delay (and a non-streamed stall); False if the client left."""
    if reply.delay_seconds > 0 and await _wait_for_disconnect(request, reply.delay_seconds):
        return False
    stalled = not stream and reply.stall_after_chunks is not None
    if stalled and await _wait_for_disconnect(request, MAX_STALL_SECONDS):
        fake.disconnects += 1
        return False
    return True


# --- OpenAI -----------------------------------------------------------------------------


def _openai_error(
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    if error_type is None:
        if status == 429:
            error_type, code = "requests", code or "rate_limit_exceeded"
        elif status >= 500:
            error_type = "server_error"
        else:
            error_type = "invalid_request_error"
    return JSONResponse(
        {"error": {"message": message, "type": error_type, "param": None, "code": code}},
        status_code=status,
        headers={"x-request-id": _new_id("req_"), **(headers or {})},
    )


def _openai_auth_error(request: Request) -> JSONResponse | None:
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme != "Bearer" or not key.strip():
        return _openai_error(
            401,
            "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        )
    if key == BAD_KEY:
        return _openai_error(
            401,
            f"Incorrect API key provided: {key}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            code="invalid_api_key",
        )
    return None


def _openai_usage(reply: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _openai_tool_deltas(reply: Reply, ids: list[str]) -> list[dict[str, Any]]:
    """The tool_calls delta entries: per call a first one with id, type and name, then
    one per argument fragment; in call order, or round-robin when interleaved."""
    per_call: list[list[dict[str, Any]]] = []
    for index, (call, call_id) in enumerate(zip(reply.tool_calls, ids, strict=True)):
        entries: list[dict[str, Any]] = [
            {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
        ]
        entries += [
            {"index": index, "function": {"arguments": piece}}
            for piece in argument_fragments(call.arguments, call.fragments)
            if piece
        ]
        per_call.append(entries)
    if not reply.interleave_tool_calls:
        return [entry for entries in per_call for entry in entries]
    longest = max((len(entries) for entries in per_call), default=0)
    return [entries[i] for i in range(longest) for entries in per_call if i < len(entries)]


def _openai_chunks(reply: Reply, model: str, include_usage: bool) -> list[dict[str, Any]]:
    completion_id = _new_id("chatcmpl-")
    created = int(time.time())
    ids = [call.id or _new_id("call_") for call in reply.tool_calls]
    finish = reply.stop or ("tool_calls" if reply.tool_calls else "stop")

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if include_usage:
            data["usage"] = None
        return data

    # The role comes once, in the first delta: the SDK's accumulator concatenates strings.
    chunks = [chunk({"role": "assistant", "content": "" if reply.text else None, "refusal": None})]
    chunks += [chunk({"content": piece}) for piece in text_deltas(reply.text)]
    chunks += [chunk({"tool_calls": [entry]}) for entry in _openai_tool_deltas(reply, ids)]
    chunks.append(chunk({}, finish))
    if include_usage:
        chunks.append(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": [],
                "usage": _openai_usage(reply),
            }
        )
    return chunks


def _openai_completion(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text or None,
        "refusal": None,
        "annotations": [],
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or _new_id("call_"),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in reply.tool_calls
        ]
    return {
        "id": _new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.stop or ("tool_calls" if reply.tool_calls else "stop"),
            }
        ],
        "usage": _openai_usage(reply),
    }


def _responses_output(reply: Reply) -> list[dict[str, Any]]:
    """The Responses API's output items: a message with the text, then the function calls."""
    items: list[dict[str, Any]] = []
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": _new_id("msg_"),
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
                ],
            }
        )
    items += [
        {
            "type": "function_call",
            "id": _new_id("fc_"),
            "call_id": call.id or _new_id("call_"),
            "name": call.name,
            "arguments": call.arguments,
            "status": "completed",
        }
        for call in reply.tool_calls
    ]
    return items


def _responses_object(
    reply: Reply,
    body: dict[str, Any],
    output: list[dict[str, Any]],
    status: str,
    response_id: str | None = None,
) -> dict[str, Any]:
    return {
        "id": response_id or _new_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": str(body["model"]),
        "instructions": body.get("instructions"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "text": {"format": {"type": "text"}},
        "error": None,
        "incomplete_details": None,
        "metadata": {},
        "usage": {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    }


def _responses_events(reply: Reply, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A streamed response's events, as the Responses API sends them: created, then per
    output item its added, deltas and done events, then completed."""
    output = _responses_output(reply)
    response_id = _new_id("resp_")
    created = _responses_object(reply, body, [], "in_progress", response_id)
    events: list[dict[str, Any]] = [{"type": "response.created", "response": created}]
    for index, item in enumerate(output):
        started = {**item, "status": "in_progress"}
        ids = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**started, "content": []},
                }
            )
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            events.append(
                {"type": "response.content_part.added", **ids, "content_index": 0, "part": part}
            )
            events += [
                {
                    "type": "response.output_text.delta",
                    **ids,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                }
                for piece in text_deltas(reply.text)
            ]
            events.append(
                {
                    "type": "response.output_text.done",
                    **ids,
                    "content_index": 0,
                    "text": reply.text,
                    "logprobs": [],
                }
            )
            events.append(
                {
                    "type": "response.content_part.done",
                    **ids,
                    "content_index": 0,
                    "part": {**part, "text": reply.text},
                }
            )
        else:
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**started, "arguments": ""},
                }
            )
            events += [
                {"type": "response.function_call_arguments.delta", **ids, "delta": piece}
                for piece in argument_fragments(item["arguments"], 3)
            ]
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    **ids,
                    "name": item["name"],
                    "arguments": item["arguments"],
                }
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append(
        {
            "type": "response.completed",
            "response": _responses_object(reply, body, output, "completed", response_id),
        }
    )
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def _openai_app(fake: FakeLLM) -> Starlette:
    async def chat_completions(request: Request) -> Response:
        body = await _read_json(request)
        if body is None:
            return _openai_error(400, "We could not parse the JSON body of your request.")
        _record(fake, request, body)
        if (auth_error := _openai_auth_error(request)) is not None:
            return auth_error
        for required in ("model", "messages"):
            if required not in body:
                return _openai_error(400, f"Missing required parameter: '{required}'.")
        reply = fake.next_reply()
        stream = body.get("stream") is True
        if not await _before_answer(request, fake, reply, stream):
            return Response(status_code=499)
        if reply.status != 200:
            return _openai_error(reply.status, reply.error_message, headers=_retry_headers(reply))
        model = str(body["model"])
        request_id = {"x-request-id": _new_id("req_")}
        if not stream:
            return JSONResponse(_openai_completion(reply, model), headers=request_id)
        options = body.get("stream_options") or {}
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        events = [
            f"data: {_json(chunk)}\n\n".encode()
            for chunk in _openai_chunks(reply, model, include_usage)
        ]
        events.append(b"data: [DONE]\n\n")
        return _EventStream(_paced(request, fake, events, reply), request_id)

    async def responses(request: Request) -> Response:
        body = await _read_json(request)
        if body is None:
            return _openai_error(400, "We could not parse the JSON body of your request.")
        _record(fake, request, body)
        if (auth_error := _openai_auth_error(request)) is not None:
            return auth_error
        if "model" not in body:
            return _openai_error(400, "Missing required parameter: 'model'.")
        reply = fake.next_reply()
        stream = body.get("stream") is True
        if not await _before_answer(request, fake, reply, stream):
            return Response(status_code=499)
        if reply.status != 200:
            return _openai_error(reply.status, reply.error_message, headers=_retry_headers(reply))
        request_id = {"x-request-id": _new_id("req_")}
        if not stream:
            answer = _responses_object(reply, body, _responses_output(reply), "completed")
            return JSONResponse(answer, headers=request_id)
        events = [
            f"event: {event['type']}\ndata: {_json(event)}\n\n".encode()
            for event in _responses_events(reply, body)
        ]
        return _EventStream(_paced(request, fake, events, reply), request_id)

    async def list_models(request: Request) -> Response:
        if (auth_error := _openai_auth_error(request)) is not None:
            return auth_error
        data = [
            {"id": model, "object": "model", "created": MODEL_CREATED, "owned_by": "system"}
            for model in fake.models
        ]
        return JSONResponse({"object": "list", "data": data})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/v1/models", list_models),
        ]
    )


# --- Anthropic --------------------------------------------------------------------------

ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def _anthropic_error(
    status: int, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    error_type = ANTHROPIC_ERROR_TYPES.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )
    request_id = _new_id("req_011")
    return JSONResponse(
        {
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": request_id,
        },
        status_code=status,
        headers={"request-id": request_id, **(headers or {})},
    )


def _anthropic_header_error(request: Request) -> JSONResponse | None:
    # The API takes the key as x-api-key or as a bearer token; the anthropic SDK (2.x)
    # sends its api_key as "Authorization: Bearer <key>".
    scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
    key = request.headers.get("x-api-key") or (bearer if scheme == "Bearer" else "")
    if not key.strip():
        return _anthropic_error(401, "x-api-key header is required")
    if key == BAD_KEY:
        return _anthropic_error(401, "invalid x-api-key")
    if not request.headers.get(ANTHROPIC_VERSION_HEADER):
        return _anthropic_error(400, "anthropic-version: header is required")
    return None


def _anthropic_message(reply: Reply, model: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": _new_id("msg_01"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _anthropic_stop(reply: Reply) -> str:
    return reply.stop or ("tool_use" if reply.tool_calls else "end_turn")


def _anthropic_events(reply: Reply, model: str) -> list[dict[str, Any]]:
    start = _anthropic_message(reply, model, [])
    # As the real API does, message_start reports the output tokens so far; the final
    # count comes in message_delta, a cumulative total the SDK overwrites with.
    start["usage"]["output_tokens"] = min(1, reply.output_tokens)
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": start},
        {"type": "ping"},
    ]
    index = 0
    if reply.text:
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
        )
        events += [
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": piece},
            }
            for piece in text_deltas(reply.text)
        ]
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    for call in reply.tool_calls:
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": call.id or _new_id("toolu_01"),
                    "name": call.name,
                    "input": {},
                },
            }
        )
        events += [
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
            for piece in argument_fragments(call.arguments, call.fragments)
        ]
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _anthropic_stop(reply), "stop_sequence": None},
            "usage": {"output_tokens": reply.output_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _tool_input(arguments: str) -> object:
    """The parsed input of a non-streamed tool_use block. Malformed JSON cannot be put in
    a real API's response; it is passed through as the raw string instead."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    return parsed if isinstance(parsed, dict) else arguments


def _anthropic_full_message(reply: Reply, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    content += [
        {
            "type": "tool_use",
            "id": call.id or _new_id("toolu_01"),
            "name": call.name,
            "input": _tool_input(call.arguments),
        }
        for call in reply.tool_calls
    ]
    message = _anthropic_message(reply, model, content)
    message["stop_reason"] = _anthropic_stop(reply)
    return message


def _anthropic_app(fake: FakeLLM) -> Starlette:
    async def messages(request: Request) -> Response:
        body = await _read_json(request)
        if body is None:
            return _anthropic_error(400, "The request body is not valid JSON.")
        _record(fake, request, body)
        if (header_error := _anthropic_header_error(request)) is not None:
            return header_error
        for required in ("model", "messages", "max_tokens"):
            if required not in body:
                return _anthropic_error(400, f"{required}: Field required")
        reply = fake.next_reply()
        stream = body.get("stream") is True
        if not await _before_answer(request, fake, reply, stream):
            return Response(status_code=499)
        if reply.status != 200:
            return _anthropic_error(reply.status, reply.error_message, _retry_headers(reply))
        model = str(body["model"])
        request_id = {"request-id": _new_id("req_011")}
        if not stream:
            return JSONResponse(_anthropic_full_message(reply, model), headers=request_id)
        events = [
            f"event: {event['type']}\ndata: {_json(event)}\n\n".encode()
            for event in _anthropic_events(reply, model)
        ]
        return _EventStream(_paced(request, fake, events, reply), request_id)

    async def list_models(request: Request) -> Response:
        if (header_error := _anthropic_header_error(request)) is not None:
            return header_error
        data = [
            {
                "type": "model",
                "id": model,
                "display_name": model,
                "created_at": MODEL_CREATED_AT,
                "lifecycle": "active",
            }
            for model in fake.models
        ]
        return JSONResponse(
            {
                "data": data,
                "has_more": False,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
            }
        )

    return Starlette(
        routes=[
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/v1/models", list_models),
        ]
    )


# --- Running ----------------------------------------------------------------------------


@contextmanager
def start_fake_openai() -> Iterator[FakeLLM]:
    """Run a fake OpenAI on a free port of 127.0.0.1 for the duration of the block.

    `base_url` ends in /v1, as AsyncOpenAI(base_url=...) expects. Serves
    POST /v1/chat/completions and POST /v1/responses (streamed and not) and GET /v1/models.
    """

    def build(root: str) -> tuple[FakeLLM, Starlette]:
        fake = FakeLLM(base_url=root + "/v1", models=list(DEFAULT_OPENAI_MODELS))
        return fake, _openai_app(fake)

    with serve_in_thread(
        "fake-openai", build, "/v1/models", probe_headers={"authorization": "Bearer probe"}
    ) as fake:
        yield fake


@contextmanager
def start_fake_anthropic() -> Iterator[FakeLLM]:
    """Run a fake Anthropic on a free port of 127.0.0.1 for the duration of the block.

    `base_url` is the root, as AsyncAnthropic(base_url=...) expects (the SDK adds /v1).
    Serves POST /v1/messages (streamed and not) and GET /v1/models.
    """

    def build(root: str) -> tuple[FakeLLM, Starlette]:
        fake = FakeLLM(base_url=root, models=list(DEFAULT_ANTHROPIC_MODELS))
        return fake, _anthropic_app(fake)

    probe = {"x-api-key": "probe", ANTHROPIC_VERSION_HEADER: "2023-06-01"}
    with serve_in_thread("fake-anthropic", build, "/v1/models", probe_headers=probe) as fake:
        yield fake
