"""A fake AWS Bedrock: the Converse streaming API and the model list, for tests only.

Bedrock is an outside service the test suite must never reach, so this stands in for it.
It serves real HTTP on 127.0.0.1 from a background thread and speaks the real wire
formats, so boto3, given the fake's `endpoint_url`, runs unchanged and botocore parses
every answer exactly as it parses AWS's:

- `POST /model/{modelId}/converse-stream` (bedrock-runtime ConverseStream) answers
  `application/vnd.amazon.eventstream`: binary event stream messages (prelude with total
  and headers lengths and its CRC32, string headers `:event-type`, `:content-type` and
  `:message-type`, a JSON payload, the message CRC32), carrying messageStart,
  contentBlockStart/Delta/Stop, messageStop and metadata events, or an in-stream
  exception message (`:message-type` exception, `:exception-type` the union member).
- `GET /foundation-models` (bedrock ListFoundationModels) answers the JSON model list.
- Errors are rest-json errors: the status code, an `x-amzn-ErrorType` header and a JSON
  `{"message": ...}` body.

Both services share the one endpoint, as `BedrockProvider(endpoint_url=...)` gives both
clients the same URL. Like AWS, the fake checks the SigV4 credential scope (an access key
in `FakeBedrock.rejected_access_keys` gets 403 UnrecognizedClientException) and, by
default, the Converse rules AWS enforces on the conversation (first turn from the user,
alternating roles, no blank text, tool results answering the previous turn's tool uses,
a toolConfig whenever tool blocks appear, a known model id) with AWS's 400
ValidationException.

A test scripts the replies; each ConverseStream request takes the next one:

    with start_fake_bedrock() as bedrock:
        bedrock.replies.append(Reply(tool_calls=[ToolCallScript("search", '{"q": "x"}')]))
        provider = BedrockProvider(region="us-east-1", access_key_id="test",
                                   secret_access_key="test", endpoint_url=bedrock.endpoint_url)

Knobs on `Reply` make a reply fail (`error=AwsError(...)`, before any byte of the
stream), fail mid-stream (`stream_error`), arrive late (`delay_seconds`), stop mid-stream
and hang until the client goes away (`stall_after_events`; the fake counts those in
`FakeBedrock.disconnects`), or split each message across two HTTP chunks
(`split_messages`) so the client has to reassemble them.
"""

from __future__ import annotations

import asyncio
import binascii
import json
import re
import secrets
import struct
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.fakes.llm_servers import ToolCallScript, argument_fragments, text_deltas
from tests.fakes.serving import serve_in_thread

REGION = "us-east-1"
EVENT_STREAM_TYPE = "application/vnd.amazon.eventstream"
PING_PATH = "/_fake/ping"
BAD_ACCESS_KEY = "bad-key"
DISCONNECT_POLL_SECONDS = 0.05
MAX_STALL_SECONDS = 30.0
DEFAULT_MODELS = [
    "anthropic.claude-3-5-haiku-20241022-v1:0",
    "amazon.nova-lite-v1:0",
    "meta.llama3-8b-instruct-v1:0",
]
# The credential scope of a SigV4 Authorization header; both services sign as "bedrock".
_SIGV4 = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$"
)
# Header value type 7 of the event stream encoding: a UTF-8 string with a 2-byte length.
_STRING_HEADER = 7


@dataclass(frozen=True)
class AwsError:
    """An AWS error answer: status code, error code (x-amzn-ErrorType) and message."""

    status: int
    code: str
    message: str = "error injected by the fake Bedrock"


ACCESS_DENIED = AwsError(
    403, "AccessDeniedException", "You don't have access to the model with the specified model ID."
)
THROTTLED = AwsError(
    429, "ThrottlingException", "Too many requests, please wait before trying again."
)
INTERNAL_ERROR = AwsError(500, "InternalServerException", "The server encountered an error.")
UNAVAILABLE = AwsError(503, "ServiceUnavailableException", "Service is temporarily unavailable.")


@dataclass
class Reply:
    """One scripted model reply, the answer to one ConverseStream request."""

    # Streamed in several deltas, one per word (with the whitespace before it).
    text: str = ""
    tool_calls: list[ToolCallScript] = field(default_factory=list)
    input_tokens: int = 10
    output_tokens: int = 5
    # messageStop's stopReason; default "tool_use" with tool calls, else "end_turn".
    stop_reason: str | None = None
    # Set: answer this error instead of a stream (the status line, nothing streamed).
    error: AwsError | None = None
    # Set: after `stream_error_after` events, end the stream with this in-stream exception,
    # named as the ConverseStreamOutput union member ("throttlingException", ...).
    stream_error: str | None = None
    stream_error_after: int = 1
    stream_error_message: str = "error injected mid-stream by the fake Bedrock"
    # Waited before answering at all (ends early if the client goes away).
    delay_seconds: float = 0.0
    # Waited between two events of the stream.
    event_delay_seconds: float = 0.0
    # Stream this many events and then hang until the client disconnects, at most
    # MAX_STALL_SECONDS (or until the fake stops), after which the stream ends there.
    stall_after_events: int | None = None
    # Send each event stream message as two HTTP chunks, cut inside the message, so the
    # client has to buffer partial messages as it must for a real network.
    split_messages: bool = True


@dataclass
class RecordedRequest:
    """One request the fake received, rejected ones too."""

    operation: str  # "ConverseStream" or "ListFoundationModels"
    model_id: str | None
    body: dict[str, Any]
    # Lower-cased header names.
    headers: dict[str, str]


@dataclass
class FakeBedrock:
    """The running fake's address and state; a test may change its fields at any time."""

    endpoint_url: str
    region: str = REGION
    # Consumed one per ConverseStream request; when empty, the answer is Reply(text="ok").
    replies: list[Reply] = field(default_factory=list)
    # Every request received, in order.
    requests: list[RecordedRequest] = field(default_factory=list)
    # Listed by ListFoundationModels, and the only model ids ConverseStream accepts when
    # `validate` is on.
    models: list[str] = field(default_factory=lambda: list(DEFAULT_MODELS))
    # Set: ListFoundationModels answers this error instead of the list.
    models_error: AwsError | None = None
    # Check requests as AWS does and answer 400 ValidationException when one breaks a rule.
    validate: bool = True
    # Requests signed with one of these access keys get 403 UnrecognizedClientException.
    rejected_access_keys: set[str] = field(default_factory=lambda: {BAD_ACCESS_KEY})
    # How many streams ended because the client went away.
    disconnects: int = 0

    _closing: threading.Event = field(default_factory=threading.Event, init=False, repr=False)

    def next_reply(self) -> Reply:
        return self.replies.pop(0) if self.replies else Reply(text="ok")

    def bodies(self, operation: str = "ConverseStream") -> list[dict[str, Any]]:
        """The JSON bodies of the requests for one operation, in order."""
        return [r.body for r in self.requests if r.operation == operation]


# --- The event stream encoding ----------------------------------------------------------


def _crc32(data: bytes, crc: int = 0) -> int:
    return binascii.crc32(data, crc) & 0xFFFFFFFF


def _encode_headers(headers: dict[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        raw_name = name.encode("utf-8")
        raw_value = value.encode("utf-8")
        out += struct.pack("!B", len(raw_name)) + raw_name
        out += struct.pack("!BH", _STRING_HEADER, len(raw_value)) + raw_value
    return bytes(out)


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event stream message, as botocore.eventstream.EventStreamBuffer decodes it.

    [total length][headers length][prelude CRC32] [headers] [payload] [message CRC32],
    lengths and CRCs big-endian unsigned 32-bit; the message CRC covers all before it.
    """
    raw_headers = _encode_headers(headers)
    total_length = 12 + len(raw_headers) + len(payload) + 4
    lengths = struct.pack("!II", total_length, len(raw_headers))
    prelude = lengths + struct.pack("!I", _crc32(lengths))
    message = prelude + raw_headers + payload
    return message + struct.pack("!I", _crc32(message))


def _padding() -> str:
    # Bedrock pads every event with a "p" member of varying length so the size of the
    # encrypted frames does not give away the tokens; clients must ignore it.
    return "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[
        : 1 + secrets.randbelow(40)
    ]


def event_message(event_type: str, payload: dict[str, Any]) -> bytes:
    body = json.dumps({**payload, "p": _padding()}, separators=(",", ":"))
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_message(headers, body.encode("utf-8"))


def exception_message(exception_type: str, message: str) -> bytes:
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    payload: dict[str, Any] = {"message": message}
    if exception_type == "modelStreamErrorException":
        payload.update(originalStatusCode=500, originalMessage=message)
    return encode_message(headers, json.dumps(payload).encode("utf-8"))


# --- Replies as Converse stream events --------------------------------------------------


def converse_events(reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    """The reply as ConverseStream events (event type, payload), in Bedrock's order: a
    text block first, then one block per tool use, messageStop, then metadata."""
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    index = 0
    if reply.text:
        # A text block has no contentBlockStart event: it opens with its first delta.
        for piece in text_deltas(reply.text):
            events.append(("contentBlockDelta", {"delta": {"text": piece}, "contentBlockIndex": 0}))
        events.append(("contentBlockStop", {"contentBlockIndex": 0}))
        index = 1
    for call in reply.tool_calls:
        tool_use_id = call.id or "tooluse_" + secrets.token_urlsafe(16)
        start = {"toolUse": {"toolUseId": tool_use_id, "name": call.name}}
        events.append(("contentBlockStart", {"start": start, "contentBlockIndex": index}))
        for piece in argument_fragments(call.arguments, call.fragments):
            delta = {"toolUse": {"input": piece}}
            events.append(("contentBlockDelta", {"delta": delta, "contentBlockIndex": index}))
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
    events.append(("messageStop", {"stopReason": stop}))
    usage = {
        "inputTokens": reply.input_tokens,
        "outputTokens": reply.output_tokens,
        "totalTokens": reply.input_tokens + reply.output_tokens,
    }
    events.append(("metadata", {"usage": usage, "metrics": {"latencyMs": 42}}))
    return events


# --- Checks AWS makes -------------------------------------------------------------------


def _aws_error(error: AwsError) -> JSONResponse:
    # Real answers carry a namespace suffix after ":" that botocore strips off.
    error_type = f"{error.code}:http://internal.amazon.com/coral/com.amazon.bedrock/"
    return JSONResponse(
        {"message": error.message},
        status_code=error.status,
        headers={"x-amzn-ErrorType": error_type, "x-amzn-RequestId": _request_id()},
    )


def _request_id() -> str:
    raw = secrets.token_hex(16)
    return f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}"


def _validation(message: str) -> AwsError:
    return AwsError(400, "ValidationException", message)


def check_signature(fake: FakeBedrock, headers: dict[str, str]) -> AwsError | None:
    """The SigV4 credential scope, as far as a fake without the secret can check it."""
    match = _SIGV4.match(headers.get("authorization", ""))
    if match is None:
        return AwsError(
            403, "IncompleteSignatureException", "Missing or malformed Authorization header."
        )
    if match["key"] in fake.rejected_access_keys:
        return AwsError(
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        )
    if match["region"] != fake.region or match["service"] != "bedrock":
        return AwsError(
            403,
            "InvalidSignatureException",
            f"Credential should be scoped to a valid region and service: "
            f"{match['region']}/{match['service']}.",
        )
    return None


def check_converse(fake: FakeBedrock, model_id: str, body: dict[str, Any]) -> AwsError | None:
    """The Converse rules AWS enforces beyond the service model's own shape checks."""
    if model_id not in fake.models:
        return _validation("The provided model identifier is invalid.")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return _validation("The messages field is required and must not be empty.")
    uses_tools = False
    previous_tool_uses: list[str] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        expected = "user" if i % 2 == 0 else "assistant"
        if i == 0 and role != "user":
            return _validation(
                "A conversation must start with a user message. Try again with a "
                "conversation that starts with a user message."
            )
        if role != expected:
            return _validation(
                "A conversation must alternate between user and assistant roles. Make sure "
                "the conversation alternates between user and assistant roles and try again."
            )
        content = message.get("content")
        if not isinstance(content, list) or not content:
            return _validation(f"The content field in the Message object at messages.{i} is empty.")
        tool_uses: list[str] = []
        tool_results: list[str] = []
        for j, block in enumerate(content):
            if "text" in block and not str(block["text"]).strip():
                return _validation(
                    f"The text field in the ContentBlock object at messages.{i}.content.{j} "
                    "is blank. Add text to the text field, and try again."
                )
            if "toolUse" in block:
                tool_uses.append(block["toolUse"].get("toolUseId", ""))
            if "toolResult" in block:
                tool_results.append(block["toolResult"].get("toolUseId", ""))
        uses_tools = uses_tools or bool(tool_uses or tool_results)
        if tool_uses and role != "assistant":
            return _validation(f"Only assistant turns may hold toolUse blocks (messages.{i}).")
        if tool_results and role != "user":
            return _validation(f"Only user turns may hold toolResult blocks (messages.{i}).")
        if role == "user" and sorted(tool_results) != sorted(previous_tool_uses):
            return _validation(
                f"Expected toolResult blocks at messages.{i}.content for the following Ids: "
                f"{', '.join(previous_tool_uses) or '(none)'}"
            )
        previous_tool_uses = tool_uses
    if uses_tools and not body.get("toolConfig"):
        return _validation(
            "The toolConfig field must be defined when using toolUse and toolResult content blocks."
        )
    return None


# --- The app ----------------------------------------------------------------------------


async def _wait_for_disconnect(request: Request, fake: FakeBedrock, limit: float) -> bool:
    """Wait up to `limit` seconds; True as soon as the client has gone away."""
    deadline = time.monotonic() + limit
    while True:
        if await request.is_disconnected():
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0 or fake._closing.is_set():
            return False
        await asyncio.sleep(min(DISCONNECT_POLL_SECONDS, remaining))


class _EventStreamResponse(StreamingResponse):
    """An event stream sent chunk by chunk, with no task of its own reading `receive`.

    Starlette's StreamingResponse listens for the disconnect itself under uvicorn and
    cancels the body, which would race the fake's own disconnect detection.
    """

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        super().__init__(
            chunks,
            media_type=EVENT_STREAM_TYPE,
            headers={"x-amzn-RequestId": _request_id()},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        async for chunk in self.body_iterator:
            body = chunk if isinstance(chunk, bytes) else str(chunk).encode("utf-8")
            await send({"type": "http.response.body", "body": body, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _stream(request: Request, fake: FakeBedrock, reply: Reply) -> AsyncIterator[bytes]:
    messages = [event_message(kind, payload) for kind, payload in converse_events(reply)]
    if reply.stream_error is not None:
        messages = messages[: reply.stream_error_after]
        messages.append(exception_message(reply.stream_error, reply.stream_error_message))
    if reply.stall_after_events is not None:
        messages = messages[: reply.stall_after_events]
    for n, message in enumerate(messages):
        if n and reply.event_delay_seconds > 0:
            await asyncio.sleep(reply.event_delay_seconds)
        if reply.split_messages and len(message) > 1:
            cut = len(message) // 2
            yield message[:cut]
            yield message[cut:]
        else:
            yield message
        if await request.is_disconnected():
            fake.disconnects += 1
            return
    if reply.stall_after_events is not None and await _wait_for_disconnect(
        request, fake, MAX_STALL_SECONDS
    ):
        fake.disconnects += 1


def _headers(request: Request) -> dict[str, str]:
    return {name.lower(): value for name, value in request.headers.items()}


def _build_app(fake: FakeBedrock) -> Starlette:
    async def converse_stream(request: Request) -> Response:
        model_id = request.path_params["model_id"]
        headers = _headers(request)
        try:
            body = json.loads(await request.body())
        except ValueError:
            body = None
        fake.requests.append(
            RecordedRequest(
                "ConverseStream", model_id, body if isinstance(body, dict) else {}, headers
            )
        )
        if not isinstance(body, dict):
            return _aws_error(_validation("The request body is not a JSON object."))
        error = check_signature(fake, headers)
        if error is None and fake.validate:
            error = check_converse(fake, model_id, body)
        if error is not None:
            return _aws_error(error)
        reply = fake.next_reply()
        if reply.delay_seconds > 0 and await _wait_for_disconnect(
            request, fake, reply.delay_seconds
        ):
            fake.disconnects += 1
            return Response(status_code=499)
        if reply.error is not None:
            return _aws_error(reply.error)
        return _EventStreamResponse(_stream(request, fake, reply))

    async def list_foundation_models(request: Request) -> Response:
        headers = _headers(request)
        fake.requests.append(RecordedRequest("ListFoundationModels", None, {}, headers))
        error = check_signature(fake, headers) or fake.models_error
        if error is not None:
            return _aws_error(error)
        summaries = [
            {
                "modelArn": f"arn:aws:bedrock:{fake.region}::foundation-model/{model_id}",
                "modelId": model_id,
                "modelName": model_id.split(".", 1)[-1],
                "providerName": model_id.split(".", 1)[0].capitalize(),
                "inputModalities": ["TEXT"],
                "outputModalities": ["TEXT"],
                "responseStreamingSupported": True,
                "customizationsSupported": [],
                "inferenceTypesSupported": ["ON_DEMAND"],
                "modelLifecycle": {"status": "ACTIVE"},
            }
            for model_id in fake.models
        ]
        return JSONResponse(
            {"modelSummaries": summaries}, headers={"x-amzn-RequestId": _request_id()}
        )

    async def ping(request: Request) -> Response:
        return Response("ok")

    return Starlette(
        routes=[
            # ":path" because botocore sends a model ARN's "/" percent-encoded, which the
            # server decodes before routing.
            Route("/model/{model_id:path}/converse-stream", converse_stream, methods=["POST"]),
            Route("/foundation-models", list_foundation_models, methods=["GET"]),
            Route(PING_PATH, ping),
        ]
    )


# --- Running ----------------------------------------------------------------------------


@contextmanager
def start_fake_bedrock() -> Iterator[FakeBedrock]:
    """Run a fake Bedrock on a free port of 127.0.0.1 for the duration of the block.

    `endpoint_url` serves both bedrock-runtime and bedrock, as boto3's endpoint_url.
    Returns only once the server answers over HTTP.
    """

    def build(root: str) -> tuple[FakeBedrock, ASGIApp]:
        fake = FakeBedrock(endpoint_url=root)
        return fake, _build_app(fake)

    def close(fake: FakeBedrock) -> None:
        fake._closing.set()  # ends stalled streams now, not at the shutdown's deadline

    with serve_in_thread("fake-bedrock", build, PING_PATH, before_stop=close) as fake:
        yield fake
