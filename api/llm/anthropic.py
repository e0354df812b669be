"""Anthropic's Messages wire format, through the official SDK (AsyncAnthropic)."""

from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic
import httpx2
from anthropic import AsyncAnthropic

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
    "refusal": "content_filter",
}


def _blocks(m: ChatMessage) -> list[Block]:
    if m.role == "tool":
        return [{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}]
    blocks: list[Block] = [{"type": "text", "text": m.content}] if m.content else []
    return blocks + [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
        for c in m.tool_calls
    ]


def to_wire(messages: Sequence[ChatMessage]) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt, and the turns in Anthropic's shape."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    return system, alternating_turns(messages, _blocks)


def to_wire_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
        for t in tools
    ]


def _said(e: anthropic.APIStatusError) -> str:
    """The provider's own message, only from Anthropic's JSON error body."""
    body = e.body
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return f": {brief(message)}" if isinstance(message, str) and message else ""


def provider_error(e: Exception) -> ProviderError:
    """The typed error for an exception of the anthropic SDK or its HTTP client."""
    if isinstance(e, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        return ProviderAuthFailed(f"Anthropic refused the API key ({e.status_code}); check it.")
    if isinstance(e, anthropic.RateLimitError):
        return ProviderRateLimited("Anthropic is rate limiting this key; retried, then gave up.")
    if isinstance(e, anthropic.APITimeoutError):
        return ProviderTimeout("Anthropic did not answer in time.")
    if isinstance(e, anthropic.APIConnectionError):
        return ProviderUnavailable("Anthropic cannot be reached.")
    if isinstance(e, anthropic.APIStatusError):
        if e.status_code >= 500:
            return ProviderUnavailable(f"Anthropic failed ({e.status_code}){_said(e)}")
        if 300 <= e.status_code < 400:
            return ProviderRejected("Anthropic answered with a redirect, which is not followed.")
        return ProviderRejected(f"Anthropic refused the request ({e.status_code}){_said(e)}")
    if isinstance(e, httpx2.TimeoutException):
        return ProviderTimeout("Anthropic did not answer in time.")
    if isinstance(e, httpx2.TransportError):
        return ProviderUnavailable("Anthropic dropped the connection.")
    return ProviderError("Anthropic failed.")


class AnthropicProvider:
    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        self._secrets = tuple(s for s in (api_key,) if s)
        self._client = AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            # A redirect could lead past the URL guard to an internal address.
            http_client=anthropic.DefaultAioHttpClient(
                follow_redirects=False, verify=shared_ssl_context()
            ),
        )

    @property
    def name(self) -> str:
        return "anthropic"

    async def stream(self, request: ChatRequest) -> AsyncIterator[LLMEvent]:
        system, turns = to_wire(request.messages)
        params: dict[str, Any] = {
            "model": request.model,
            "messages": turns,
            "max_tokens": request.params.max_tokens,
            "stream": True,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = to_wire_tools(request.tools)
        if request.params.temperature is not None:
            params["temperature"] = request.params.temperature
        tool_blocks: dict[int, dict[str, str]] = {}
        input_tokens = output_tokens = 0
        finish: FinishReason = "stop"
        try:
            stream = await self._client.messages.create(**params)
            # Leaving the block closes the response: a consumer that stops early (a client
            # gone) ends the provider's work too.
            async with stream:
                async for event in stream:
                    if event.type == "message_start":
                        input_tokens = event.message.usage.input_tokens
                    elif (
                        event.type == "content_block_start"
                        and event.content_block.type == "tool_use"
                    ):
                        block = event.content_block
                        tool_blocks[event.index] = {"id": block.id, "name": block.name, "json": ""}
                    elif event.type == "content_block_delta":
                        if event.delta.type == "text_delta":
                            yield TextDelta(event.delta.text)
                        elif event.delta.type == "input_json_delta":
                            tool_blocks[event.index]["json"] += event.delta.partial_json
                    elif event.type == "content_block_stop" and event.index in tool_blocks:
                        done = tool_blocks.pop(event.index)
                        yield ToolCallEvent(tool_call(done["id"], done["name"], done["json"]))
                    elif event.type == "message_delta":
                        output_tokens = event.usage.output_tokens
                        if event.delta.stop_reason is not None:
                            finish = STOP.get(event.delta.stop_reason, "other")
        except (anthropic.AnthropicError, httpx2.HTTPError) as e:
            raise provider_error(e).scrubbed(self._secrets) from e
        yield Usage(input_tokens, output_tokens)
        yield Finish(finish)

    async def aclose(self) -> None:
        await self._client.close()

    async def list_models(self) -> list[str]:
        try:
            return sorted([model.id async for model in self._client.models.list()])
        except (anthropic.AnthropicError, httpx2.HTTPError) as e:
            raise provider_error(e).scrubbed(self._secrets) from e
