"""The OpenAI and Anthropic adapters, on the official SDKs, over real HTTP against fake
providers that speak the real streaming wire formats."""

import asyncio
import json
import socket
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from api.llm.anthropic import AnthropicProvider
from api.llm.errors import (
    ProviderAuthFailed,
    ProviderError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
)
from api.llm.openai import OpenAIProvider
from api.llm.types import (
    ChatMessage,
    ChatRequest,
    Finish,
    LLMEvent,
    LLMProvider,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    ToolSpec,
    Usage,
)
from tests.fakes.llm_servers import (
    FakeLLM,
    Reply,
    ToolCallScript,
    start_fake_anthropic,
    start_fake_openai,
)
from tests.fakes.serving import serve_in_thread

Build = Callable[..., LLMProvider]
APPEND = ToolSpec(
    "core_memory_append",
    "Add a line to a core memory block.",
    {
        "type": "object",
        "properties": {"block": {"type": "string"}, "content": {"type": "string"}},
        "required": ["block", "content"],
    },
)
CONVERSATION = [
    ChatMessage("system", "You remember things."),
    ChatMessage("user", "My name is Alice and I work at Google"),
]


def openai_provider(fake: FakeLLM, **kw: Any) -> LLMProvider:
    return OpenAIProvider(api_key=kw.pop("api_key", "sk-test"), base_url=fake.base_url, **kw)


def anthropic_provider(fake: FakeLLM, **kw: Any) -> LLMProvider:
    return AnthropicProvider(api_key=kw.pop("api_key", "sk-ant-test"), base_url=fake.base_url, **kw)


PROVIDERS: list[tuple[str, Callable[[], AbstractContextManager[FakeLLM]], Build]] = [
    ("openai", start_fake_openai, openai_provider),
    ("anthropic", start_fake_anthropic, anthropic_provider),
]


@pytest.fixture(params=PROVIDERS, ids=[p[0] for p in PROVIDERS])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[FakeLLM, Build]]:
    _, start, build = request.param
    with start() as fake:
        yield fake, build


async def collect(provider: LLMProvider, request: ChatRequest) -> list[LLMEvent]:
    return [event async for event in provider.stream(request)]


def request_with(messages: list[ChatMessage] = CONVERSATION) -> ChatRequest:
    return ChatRequest(model="test-model", messages=messages, tools=[APPEND])


async def test_streamed_text_usage_and_finish(served: tuple[FakeLLM, Build]) -> None:
    fake, build = served
    fake.replies.append(Reply(text="Nice to meet you, Alice!", input_tokens=42, output_tokens=7))
    events = await collect(build(fake, max_retries=0), request_with())
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == "Nice to meet you, Alice!"
    assert Usage(42, 7) in events
    assert events[-1] == Finish("stop")


async def test_tool_calls_arrive_whole_from_fragments(served: tuple[FakeLLM, Build]) -> None:
    fake, build = served
    fake.replies.append(
        Reply(
            tool_calls=[
                ToolCallScript(
                    "core_memory_append",
                    '{"block": "human", "content": "Name: Alice"}',
                    fragments=5,
                ),
                ToolCallScript(
                    "core_memory_append",
                    '{"block": "human", "content": "Works at: Google"}',
                    fragments=4,
                ),
            ]
        )
    )
    events = await collect(build(fake, max_retries=0), request_with())
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [c.arguments for c in calls] == [
        {"block": "human", "content": "Name: Alice"},
        {"block": "human", "content": "Works at: Google"},
    ]
    assert all(c.id and c.name == "core_memory_append" for c in calls)
    assert events[-1] == Finish("tool_calls")


async def test_the_whole_conversation_goes_out_in_the_providers_shape(
    served: tuple[FakeLLM, Build],
) -> None:
    fake, build = served
    call = ToolCall("call_1", "core_memory_append", {"block": "human", "content": "Name: Alice"})
    history = [
        *CONVERSATION,
        ChatMessage("assistant", tool_calls=(call,)),
        ChatMessage("tool", "Appended to [human] at line 1", tool_call_id="call_1"),
    ]
    await collect(build(fake, max_retries=0), request_with(history))
    sent = json.dumps(fake.requests[-1])
    for fragment in (
        "You remember things.",
        "My name is Alice",
        "call_1",
        "Appended to [human] at line 1",
        "core_memory_append",
    ):
        assert fragment in sent
    assert fake.requests[-1]["stream"] is True


async def test_malformed_tool_arguments_are_a_call_with_a_problem(
    served: tuple[FakeLLM, Build],
) -> None:
    fake, build = served
    fake.replies.append(Reply(tool_calls=[ToolCallScript("core_memory_append", '{"block": ')]))
    request = request_with()
    events = await collect(build(fake, max_retries=0), request)
    (call,) = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert (call.name, call.arguments, call.problem) == (
        "core_memory_append",
        {},
        "the arguments are not valid JSON.",
    )
    assert request.messages == CONVERSATION  # the caller's conversation is untouched


async def test_a_bad_key_is_a_typed_error(served: tuple[FakeLLM, Build]) -> None:
    fake, build = served
    with pytest.raises(ProviderAuthFailed) as raised:
        await collect(build(fake, api_key="bad-key", max_retries=0), request_with())
    assert "bad-key" not in raised.value.message


async def test_rate_limits_are_retried_then_reported(served: tuple[FakeLLM, Build]) -> None:
    fake, build = served
    fake.replies += [Reply(status=429, retry_after=0.01) for _ in range(3)]
    with pytest.raises(ProviderRateLimited):
        await collect(build(fake, max_retries=2), request_with())
    assert len(fake.requests) == 3


async def test_a_rate_limit_that_clears_is_invisible(served: tuple[FakeLLM, Build]) -> None:
    fake, build = served
    fake.replies += [Reply(status=429, retry_after=0.01), Reply(text="fine")]
    events = await collect(build(fake, max_retries=2), request_with())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "fine"


async def test_server_errors_and_refusals(served: tuple[FakeLLM, Build]) -> None:
    fake, build = served
    fake.replies += [Reply(status=500), Reply(status=400, error_message="unknown model")]
    with pytest.raises(ProviderUnavailable):
        await collect(build(fake, max_retries=0), request_with())
    with pytest.raises(ProviderRejected, match="unknown model"):
        await collect(build(fake, max_retries=0), request_with())


async def test_a_slow_provider_times_out(served: tuple[FakeLLM, Build]) -> None:
    fake, build = served
    fake.replies.append(Reply(text="late", delay_seconds=3))
    with pytest.raises(ProviderTimeout):
        await collect(build(fake, max_retries=0, timeout=0.5), request_with())


@pytest.mark.parametrize("make", [OpenAIProvider, AnthropicProvider])
async def test_a_provider_with_nothing_listening_is_unavailable_not_slow(
    make: type[OpenAIProvider] | type[AnthropicProvider],
) -> None:
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
    # The port is free again: connecting to it is refused.
    provider = make(api_key="k", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    with pytest.raises(ProviderUnavailable, match="cannot be reached"):
        await collect(provider, request_with())
    await provider.aclose()


@pytest.mark.parametrize("make", [OpenAIProvider, AnthropicProvider])
async def test_a_provider_that_hangs_up_unanswered_is_unavailable_not_slow(
    make: type[OpenAIProvider] | type[AnthropicProvider],
) -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    provider = make(api_key="k", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    with pytest.raises(ProviderUnavailable):
        await collect(provider, request_with())
    await provider.aclose()
    server.close()
    await server.wait_closed()


async def test_models_are_listed(served: tuple[FakeLLM, Build]) -> None:
    fake, build = served
    assert await build(fake, max_retries=0).list_models() == sorted(fake.models)


async def test_a_consumer_that_stops_closes_the_connection(served: tuple[FakeLLM, Build]) -> None:
    fake, build = served
    # Past the opening events of either format, into the text.
    fake.replies.append(Reply(text="one two three four five six", stall_after_chunks=6))
    stream = build(fake, max_retries=0).stream(request_with())
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    for _ in range(100):
        if fake.disconnects:
            break
        await asyncio.sleep(0.05)
    assert fake.disconnects == 1


async def test_openai_stream_events_that_are_not_objects_are_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Chunks are read as plain JSON (no SDK model per chunk): one that is not an object is
    passed over with a warning, and the rest of the answer still arrives."""
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": "stop"}]}
    body = f"data: [1, 2]\n\ndata: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()

    async def completions(request: Request) -> Response:
        return Response(body, media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    app.add_route("/v1/models", lambda r: JSONResponse({"data": []}))

    def build(root: str) -> tuple[str, Starlette]:
        return root + "/v1", app

    with serve_in_thread("odd-openai", build, "/v1/models") as base_url:
        provider = OpenAIProvider(api_key="sk-test", base_url=base_url, max_retries=0)
        events = await collect(provider, request_with())
    assert events == [TextDelta("Hello"), Finish("stop")]
    assert "not an object" in caplog.text


async def odd_openai(body: bytes) -> list[LLMEvent]:
    """What the OpenAI adapter makes of a streamed body sent as is."""

    async def completions(request: Request) -> Response:
        return Response(body, media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    app.add_route("/v1/models", lambda r: JSONResponse({"data": []}))

    def build(root: str) -> tuple[str, Starlette]:
        return root + "/v1", app

    with serve_in_thread("odd-openai", build, "/v1/models") as base_url:
        provider = OpenAIProvider(api_key="sk-test", base_url=base_url, max_retries=0)
        try:
            return await collect(provider, request_with())
        finally:
            await provider.aclose()


def text_chunk(text: str, finish: str | None = None) -> str:
    return json.dumps(
        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
    )


async def test_openai_stream_lines_end_as_sse_allows() -> None:
    """CR LF and CR line endings, comments, other fields and data over several lines are
    read as SSE says (the adapter reads the stream's bytes itself)."""
    body = (
        f": keep-alive\r\n\r\nid: 1\r\ndata: {text_chunk('Hel')}\r\n\r\n"
        f"data: {text_chunk('lo')}\r\rdata:{text_chunk(' there')}\n\n"
        'data: {"choices": [{"index": 0, "delta": {"content": "!"},\ndata: '
        '"finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'
    ).encode()
    events = await odd_openai(body)
    assert events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        TextDelta(" there"),
        TextDelta("!"),
        Finish("stop"),
    ]


async def test_an_error_inside_the_openai_stream_fails_the_call() -> None:
    body = (
        f"data: {text_chunk('Par')}\n\n"
        'data: {"error": {"message": "The server is overloaded", "type": "server_error"}}\n\n'
    ).encode()
    with pytest.raises(ProviderError) as raised:
        await odd_openai(body)
    # As the SDK's own stream raises it (an APIError without a status), mapped as before.
    assert type(raised.value) is ProviderError
    assert raised.value.message == "The OpenAI-compatible server failed."
    assert isinstance(raised.value.__cause__, openai.APIError)
    assert not isinstance(raised.value.__cause__, openai.APIStatusError)
