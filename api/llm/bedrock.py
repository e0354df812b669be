"""AWS Bedrock's Converse API, through boto3. boto3 is synchronous, so the stream is read on
a worker thread and handed to the event loop through a queue; the loop never blocks."""

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    ParamValidationError,
)
from urllib3.exceptions import ProtocolError, ReadTimeoutError

from api.llm.errors import (
    ProviderAuthFailed,
    ProviderError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
    brief,
)
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
from api.llm.wire import Block, alternating_turns, tool_call

STOP: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "content_filtered": "content_filter",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
}
AUTH_CODES = {
    "AccessDeniedException",
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "ExpiredTokenException",
}
THROTTLE_CODES = {"ThrottlingException", "TooManyRequestsException"}
TIMEOUT_CODES = {"ModelTimeoutException"}
UNAVAILABLE_CODES = {
    "ServiceUnavailableException",
    "InternalServerException",
    "ModelStreamErrorException",
    "ModelNotReadyException",
}
_END = object()
# Each streamed reply holds a thread while it lasts: a pool of its own, so long replies
# never starve the loop's default executor (which also resolves DNS).
_STREAMS = ThreadPoolExecutor(max_workers=32, thread_name_prefix="bedrock")


def _blocks(m: ChatMessage) -> list[Block]:
    if m.role == "tool":
        return [{"toolResult": {"toolUseId": m.tool_call_id, "content": [{"text": m.content}]}}]
    blocks: list[Block] = [{"text": m.content}] if m.content else []
    return blocks + [
        {"toolUse": {"toolUseId": c.id, "name": c.name, "input": dict(c.arguments)}}
        for c in m.tool_calls
    ]


def to_wire(messages: Sequence[ChatMessage]) -> tuple[list[Block], list[dict[str, Any]]]:
    """System blocks and Converse messages."""
    system: list[Block] = [
        {"text": m.content} for m in messages if m.role == "system" and m.content
    ]
    return system, alternating_turns(messages, _blocks)


def to_wire_tools(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    return {
        "tools": [
            {
                "toolSpec": {
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": {"json": dict(t.parameters)},
                }
            }
            for t in tools
        ]
    }


def provider_error(e: Exception) -> ProviderError:
    if isinstance(e, ClientError):
        code = e.response.get("Error", {}).get("Code", "")
        code = code[:1].upper() + code[1:]  # errors inside a stream come in lower camel case
        message = brief(e.response.get("Error", {}).get("Message", ""))
        if code in AUTH_CODES:
            return ProviderAuthFailed(f"Bedrock refused the credentials ({code}); check them.")
        if code in THROTTLE_CODES:
            return ProviderRateLimited(
                "Bedrock is throttling these requests; retried, then gave up."
            )
        if code in TIMEOUT_CODES:
            return ProviderTimeout("Bedrock did not answer in time.")
        if code in UNAVAILABLE_CODES:
            return ProviderUnavailable(f"Bedrock failed ({code}): {message}")
        return ProviderRejected(f"Bedrock refused the request ({code}): {message}")
    # A stream that goes quiet fails in urllib3, beneath botocore.
    if isinstance(e, ReadTimeoutError) or (
        isinstance(e, BotoCoreError) and "timeout" in type(e).__name__.lower()
    ):
        return ProviderTimeout("Bedrock did not answer in time.")
    if isinstance(e, NoCredentialsError):
        return ProviderAuthFailed("Bedrock needs AWS credentials, and none were found.")
    if isinstance(e, ParamValidationError):
        return ProviderRejected("Bedrock refused the request: a parameter is not valid.")
    if isinstance(e, BotoCoreError | ProtocolError):
        return ProviderUnavailable("Bedrock cannot be reached or dropped the connection.")
    return ProviderError(f"Bedrock failed: {brief(e)}")


def _shutdown(stream: Any) -> None:
    raw = getattr(stream, "_raw_stream", None)  # botocore's EventStream over urllib3
    try:
        if raw is not None and hasattr(raw, "shutdown"):
            raw.shutdown()
    except (ValueError, RuntimeError, OSError):
        pass  # already finished


class BedrockProvider:
    def __init__(
        self,
        *,
        region: str,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        endpoint_url: str | None = None,
        timeout: float = 60.0,
        max_attempts: int = 3,
    ) -> None:
        self._secrets = tuple(s for s in (access_key_id, secret_access_key, session_token) if s)
        session = boto3.session.Session(
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            aws_session_token=session_token,
            region_name=region,
        )
        config = Config(
            read_timeout=timeout,
            retries={"mode": "adaptive", "total_max_attempts": max_attempts},
        )
        self._runtime = session.client("bedrock-runtime", endpoint_url=endpoint_url, config=config)
        self._control = session.client("bedrock", endpoint_url=endpoint_url, config=config)

    @property
    def name(self) -> str:
        return "bedrock"

    def _request(self, request: ChatRequest) -> dict[str, Any]:
        system, turns = to_wire(request.messages)
        params: dict[str, Any] = {
            "modelId": request.model,
            "messages": turns,
            "inferenceConfig": {"maxTokens": request.params.max_tokens},
        }
        if system:
            params["system"] = system
        if request.tools:
            params["toolConfig"] = to_wire_tools(request.tools)
        if request.params.temperature is not None:
            params["inferenceConfig"]["temperature"] = request.params.temperature
        return params

    def _events(
        self, params: dict[str, Any], stop: threading.Event, opened: list[Any]
    ) -> Iterator[dict[str, Any]]:
        stream = self._runtime.converse_stream(**params)["stream"]
        opened.append(stream)
        try:
            for event in stream:
                if stop.is_set():
                    return
                yield event
        finally:
            stream.close()

    async def stream(self, request: ChatRequest) -> AsyncIterator[LLMEvent]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        stop = threading.Event()
        opened: list[Any] = []
        params = self._request(request)

        def pump() -> None:
            try:
                for event in self._events(params, stop, opened):
                    loop.call_soon_threadsafe(queue.put_nowait, event)
            except Exception as e:  # handed to the loop, raised there
                loop.call_soon_threadsafe(queue.put_nowait, e)
            loop.call_soon_threadsafe(queue.put_nowait, _END)

        loop.run_in_executor(_STREAMS, pump)
        tools: dict[int, dict[str, str]] = {}
        finish: FinishReason = "stop"
        try:
            while (item := await queue.get()) is not _END:
                if isinstance(item, Exception):
                    raise provider_error(item).scrubbed(self._secrets) from item
                assert isinstance(item, dict)
                if "contentBlockStart" in item:
                    start = item["contentBlockStart"]
                    use = start.get("start", {}).get("toolUse")
                    if use:
                        tools[start["contentBlockIndex"]] = {
                            "id": use["toolUseId"],
                            "name": use["name"],
                            "json": "",
                        }
                elif "contentBlockDelta" in item:
                    block = item["contentBlockDelta"]
                    delta = block["delta"]
                    if "text" in delta:
                        yield TextDelta(delta["text"])
                    elif "toolUse" in delta and block["contentBlockIndex"] in tools:
                        tools[block["contentBlockIndex"]]["json"] += delta["toolUse"]["input"]
                elif "contentBlockStop" in item:
                    done = tools.pop(item["contentBlockStop"]["contentBlockIndex"], None)
                    if done is not None:
                        yield ToolCallEvent(tool_call(done["id"], done["name"], done["json"]))
                elif "messageStop" in item:
                    finish = STOP.get(item["messageStop"].get("stopReason", ""), "other")
                elif "metadata" in item:
                    usage = item["metadata"].get("usage", {})
                    yield Usage(usage.get("inputTokens", 0), usage.get("outputTokens", 0))
        finally:
            # A consumer that stops early (a client gone) ends the read. Closing the stream
            # here would wait for the worker's read; shutting the socket down wakes it, and
            # the worker closes the stream itself.
            stop.set()
            for stream in opened:
                _shutdown(stream)
        yield Finish(finish)

    async def aclose(self) -> None:
        def close() -> None:
            self._runtime.close()
            self._control.close()

        await asyncio.get_running_loop().run_in_executor(_STREAMS, close)

    async def list_models(self) -> list[str]:
        def fetch() -> list[str]:
            summaries = self._control.list_foundation_models()["modelSummaries"]
            return sorted(s["modelId"] for s in summaries)

        try:
            return await asyncio.get_running_loop().run_in_executor(_STREAMS, fetch)
        except (ClientError, BotoCoreError) as e:
            raise provider_error(e).scrubbed(self._secrets) from e
