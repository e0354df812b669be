"""The Bedrock adapter over real HTTP, against the fake Bedrock in tests/fakes/bedrock_server.py.

boto3 runs unchanged: it signs, sends and retries real requests, and botocore decodes the
fake's binary event stream exactly as it decodes AWS's. So these tests cover the whole
path: the request the adapter builds (checked by the fake against the Converse rules AWS
enforces), the stream it reassembles, and how each AWS failure reaches the caller.

"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable, Iterator

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

from api.llm.bedrock import BedrockProvider
from api.llm.errors import (
    ProviderAuthFailed,
    ProviderError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
)
from api.llm.types import (
    ChatMessage,
    ChatRequest,
    Finish,
    FinishReason,
    GenerationParams,
    LLMEvent,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    ToolSpec,
    Usage,
)
from tests.fakes.bedrock_server import (
    ACCESS_DENIED,
    BAD_ACCESS_KEY,
    DEFAULT_MODELS,
    INTERNAL_ERROR,
    THROTTLED,
    UNAVAILABLE,
    AwsError,
    FakeBedrock,
    Reply,
    event_message,
    start_fake_bedrock,
)
from tests.fakes.llm_servers import ToolCallScript

MODEL = DEFAULT_MODELS[0]
SECRET = "fake-secret-not-to-be-quoted"
WEATHER = ToolSpec(
    "weather",
    "The current weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
# Queued for a failure that must reach the caller however many times botocore retries.
EVERY_ATTEMPT = 5


@pytest.fixture
def bedrock() -> Iterator[FakeBedrock]:
    with start_fake_bedrock() as fake:
        yield fake


def provider(
    fake: FakeBedrock,
    *,
    max_attempts: int = 1,
    timeout: float = 10.0,
    access_key_id: str = "test",
) -> BedrockProvider:
    return BedrockProvider(
        region="us-east-1",
        access_key_id=access_key_id,
        secret_access_key=SECRET,
        endpoint_url=fake.endpoint_url,
        timeout=timeout,
        max_attempts=max_attempts,
    )


def ask(text: str = "Hello?", tools: tuple[ToolSpec, ...] = ()) -> ChatRequest:
    return ChatRequest(
        model=MODEL,
        messages=[ChatMessage("system", "You are helpful."), ChatMessage("user", text)],
        tools=tools,
    )


async def collect(bedrock_provider: BedrockProvider, request: ChatRequest) -> list[LLMEvent]:
    return [event async for event in bedrock_provider.stream(request)]


async def eventually(condition: Callable[[], bool], within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


# --- The fake's wire format ------------------------------------------------------------


def test_the_fake_encodes_messages_as_botocore_decodes_them() -> None:
    raw = event_message("contentBlockDelta", {"delta": {"text": "Hi"}, "contentBlockIndex": 0})
    buffer = EventStreamBuffer()
    buffer.add_data(raw[:7])
    assert list(buffer) == []  # a partial prelude waits for more bytes
    buffer.add_data(raw[7:])
    [message] = list(buffer)
    # Read through to_response_dict, as botocore does (the stubs mistype .headers).
    assert message.to_response_dict()["headers"] == {
        ":event-type": "contentBlockDelta",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert b'"delta":{"text":"Hi"}' in message.payload

    corrupted = bytearray(raw)
    corrupted[-6] ^= 0xFF  # a payload byte: the message CRC no longer matches
    buffer = EventStreamBuffer()
    buffer.add_data(bytes(corrupted))
    with pytest.raises(ChecksumMismatch):
        list(buffer)


# --- Replies -----------------------------------------------------------------------------


async def test_streamed_text_is_reassembled_in_order_with_usage_and_finish(
    bedrock: FakeBedrock,
) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    bedrock.replies.append(Reply(text=text, input_tokens=12, output_tokens=7))

    events = await collect(provider(bedrock), ask())

    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    assert "".join(d.text for d in deltas) == text
    assert events == [*deltas, Usage(12, 7), Finish("stop")]


async def test_two_tool_calls_arrive_parsed_from_fragments(bedrock: FakeBedrock) -> None:
    bedrock.replies.append(
        Reply(
            text="Let me check both.",
            tool_calls=[
                ToolCallScript("weather", '{"city": "Paris", "unit": "C"}', fragments=4, id="t1"),
                ToolCallScript("weather", '{"city": "Rome"}', fragments=3, id="t2"),
            ],
            input_tokens=30,
            output_tokens=25,
        )
    )

    events = await collect(provider(bedrock), ask("Weather in Paris and Rome?", (WEATHER,)))

    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert calls == [
        ToolCall("t1", "weather", {"city": "Paris", "unit": "C"}),
        ToolCall("t2", "weather", {"city": "Rome"}),
    ]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me check both."
    assert events[-2:] == [Usage(30, 25), Finish("tool_calls")]


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("content_filtered", "content_filter"),
        ("guardrail_intervened", "content_filter"),
        ("malformed_model_output", "other"),
    ],
)
async def test_stop_reasons_map_to_finish_reasons(
    bedrock: FakeBedrock, stop_reason: str, finish: FinishReason
) -> None:
    bedrock.replies.append(Reply(text="Partial", stop_reason=stop_reason))
    events = await collect(provider(bedrock), ask())
    assert events[-1] == Finish(finish)


async def test_a_tool_round_trip_sends_the_conversation_in_converse_shape(
    bedrock: FakeBedrock,
) -> None:
    bedrock_provider = provider(bedrock)
    calls = [
        ToolCallScript("weather", '{"city": "Paris"}', id="tooluse_paris"),
        ToolCallScript("weather", '{"city": "Rome"}', id="tooluse_rome"),
    ]
    bedrock.replies += [
        Reply(text="Let me check.", tool_calls=calls),
        Reply(text="Paris 18C, Rome 24C."),
    ]
    messages = [
        ChatMessage("system", "You are helpful."),
        ChatMessage("system", "Answer briefly."),
        ChatMessage("user", "Weather in Paris and Rome?"),
    ]
    first = await collect(
        bedrock_provider, ChatRequest(model=MODEL, messages=messages, tools=(WEATHER,))
    )
    made = tuple(e.call for e in first if isinstance(e, ToolCallEvent))
    messages += [
        ChatMessage("assistant", "Let me check.", tool_calls=made),
        ChatMessage("tool", "18C", tool_call_id="tooluse_paris"),
        ChatMessage("tool", "24C", tool_call_id="tooluse_rome"),
    ]
    request = ChatRequest(
        model=MODEL,
        messages=messages,
        tools=(WEATHER,),
        params=GenerationParams(max_tokens=256, temperature=0.2),
    )

    second = await collect(bedrock_provider, request)

    # The fake checks the rules AWS enforces and would have answered 400 otherwise.
    assert second[-1] == Finish("stop")
    [_, sent] = bedrock.requests
    assert sent.operation == "ConverseStream"
    assert sent.model_id == MODEL
    assert "Credential=test/" in sent.headers["authorization"]
    assert sent.body == {
        "system": [{"text": "You are helpful."}, {"text": "Answer briefly."}],
        "messages": [
            {"role": "user", "content": [{"text": "Weather in Paris and Rome?"}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "Let me check."},
                    {
                        "toolUse": {
                            "toolUseId": "tooluse_paris",
                            "name": "weather",
                            "input": {"city": "Paris"},
                        }
                    },
                    {
                        "toolUse": {
                            "toolUseId": "tooluse_rome",
                            "name": "weather",
                            "input": {"city": "Rome"},
                        }
                    },
                ],
            },
            {
                # Both tool results travel in the one user turn that follows.
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "tooluse_paris", "content": [{"text": "18C"}]}},
                    {"toolResult": {"toolUseId": "tooluse_rome", "content": [{"text": "24C"}]}},
                ],
            },
        ],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "weather",
                        "description": "The current weather in a city",
                        "inputSchema": {"json": dict(WEATHER.parameters)},
                    }
                }
            ]
        },
        "inferenceConfig": {"maxTokens": 256, "temperature": 0.2},
    }


@pytest.mark.parametrize(
    "arguments", ['{"city": "Par', '["Paris"]', '"Paris"'], ids=["truncated", "array", "string"]
)
async def test_tool_arguments_that_are_not_a_json_object_are_a_call_with_a_problem(
    bedrock: FakeBedrock, arguments: str
) -> None:
    bedrock.replies.append(Reply(tool_calls=[ToolCallScript("weather", arguments)]))
    events = await collect(provider(bedrock), ask(tools=(WEATHER,)))
    (call,) = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert call.name == "weather"
    assert call.arguments == {}
    assert call.problem is not None


# --- Failures ------------------------------------------------------------------------


async def test_access_denied_is_an_auth_failure_and_is_not_retried(bedrock: FakeBedrock) -> None:
    bedrock.replies.append(Reply(error=ACCESS_DENIED))
    with pytest.raises(ProviderAuthFailed, match="AccessDeniedException") as caught:
        await collect(provider(bedrock, max_attempts=2), ask())
    assert SECRET not in str(caught.value)
    assert len(bedrock.requests) == 1


async def test_an_unknown_access_key_is_an_auth_failure(bedrock: FakeBedrock) -> None:
    with pytest.raises(ProviderAuthFailed, match="UnrecognizedClientException"):
        await collect(provider(bedrock, access_key_id=BAD_ACCESS_KEY), ask())


async def test_throttling_is_retried_then_rate_limited(bedrock: FakeBedrock) -> None:
    bedrock.replies += [Reply(error=THROTTLED)] * EVERY_ATTEMPT
    with pytest.raises(ProviderRateLimited):
        await collect(provider(bedrock, max_attempts=2), ask())
    assert len(bedrock.requests) > 1


async def test_a_throttled_request_that_succeeds_on_retry_streams_normally(
    bedrock: FakeBedrock,
) -> None:
    bedrock.replies += [Reply(error=THROTTLED), Reply(text="Made it.")]
    events = await collect(provider(bedrock, max_attempts=2), ask())
    assert events == [TextDelta("Made"), TextDelta(" it."), Usage(10, 5), Finish("stop")]
    assert len(bedrock.requests) == 2


@pytest.mark.parametrize("error", [INTERNAL_ERROR, UNAVAILABLE], ids=["500", "503"])
async def test_server_errors_are_unavailable(bedrock: FakeBedrock, error: AwsError) -> None:
    bedrock.replies += [Reply(error=error)] * EVERY_ATTEMPT
    with pytest.raises(ProviderUnavailable, match=error.code):
        await collect(provider(bedrock, max_attempts=1), ask())


async def test_max_attempts_one_makes_a_single_attempt(bedrock: FakeBedrock) -> None:
    bedrock.replies += [Reply(error=INTERNAL_ERROR)] * EVERY_ATTEMPT
    with pytest.raises(ProviderUnavailable):
        await collect(provider(bedrock, max_attempts=1), ask())
    assert len(bedrock.requests) == 1


async def test_a_validation_exception_is_a_rejection_quoting_aws(bedrock: FakeBedrock) -> None:
    request = ChatRequest(model="no.such-model-v1:0", messages=[ChatMessage("user", "Hi")])
    with pytest.raises(ProviderRejected, match="model identifier is invalid"):
        await collect(provider(bedrock), request)
    assert len(bedrock.requests) == 1


async def test_no_answer_in_time_is_a_timeout(bedrock: FakeBedrock) -> None:
    bedrock.replies += [Reply(text="late", delay_seconds=3.0)] * EVERY_ATTEMPT
    with pytest.raises(ProviderTimeout):
        await collect(provider(bedrock, timeout=0.3), ask())


@pytest.mark.parametrize(
    ("exception_type", "expected"),
    [
        pytest.param(
            "throttlingException",
            ProviderRateLimited,
        ),
        pytest.param(
            "modelStreamErrorException",
            ProviderUnavailable,
        ),
        pytest.param(
            "internalServerException",
            ProviderUnavailable,
        ),
        pytest.param(
            "serviceUnavailableException",
            ProviderUnavailable,
        ),
        ("validationException", ProviderRejected),
    ],
)
async def test_an_exception_in_the_stream_is_typed_by_its_kind(
    bedrock: FakeBedrock, exception_type: str, expected: type[ProviderError]
) -> None:
    bedrock.replies.append(
        Reply(text="one two three", stream_error=exception_type, stream_error_after=3)
    )
    received: list[LLMEvent] = []

    async def consume() -> None:
        async for event in provider(bedrock).stream(ask()):
            received.append(event)

    with pytest.raises(expected):
        await consume()
    assert received == [TextDelta("one"), TextDelta(" two")]


async def test_a_stream_that_stalls_past_the_read_timeout_is_a_timeout(
    bedrock: FakeBedrock,
) -> None:
    bedrock.replies.append(Reply(text="one two three", stall_after_events=2))
    with pytest.raises(ProviderTimeout):
        await collect(provider(bedrock, timeout=0.5), ask())


# --- Early exit and the model list ---------------------------------------------------------


async def leave_after_the_first_event(bedrock: FakeBedrock) -> float:
    """Read one event of a stream the fake then keeps open, silent, and leave as a
    consumer whose client went away does; returns when it began leaving. The read timeout
    (2s) bounds how long a blocked close could hold up the event loop."""
    bedrock.replies.append(Reply(text="one two three", stall_after_events=2))
    agen = provider(bedrock, timeout=2.0).stream(ask())
    assert isinstance(agen, AsyncGenerator)
    async for event in agen:
        assert event == TextDelta("one")
        break
    # Leave while the worker thread is surely blocked reading the silent stream, as when
    # a client goes away while the model is still thinking.
    await asyncio.sleep(0.2)
    left = time.monotonic()
    await agen.aclose()
    return left


async def test_a_consumer_that_stops_early_is_let_go_promptly(bedrock: FakeBedrock) -> None:
    left = await leave_after_the_first_event(bedrock)
    assert time.monotonic() - left < 0.5


async def test_a_consumer_that_stops_early_releases_the_connection(bedrock: FakeBedrock) -> None:
    left = await leave_after_the_first_event(bedrock)
    # The fake sees the client hang up well before the read timeout would end the read.
    assert await eventually(lambda: bedrock.disconnects == 1, within=2.0)
    assert time.monotonic() - left < 1.0


async def test_list_models_returns_the_model_ids(bedrock: FakeBedrock) -> None:
    bedrock.models = ["meta.llama3-8b-instruct-v1:0", "amazon.nova-pro-v1:0"]
    models = await provider(bedrock).list_models()
    assert models == ["amazon.nova-pro-v1:0", "meta.llama3-8b-instruct-v1:0"]
    [listed] = bedrock.requests
    assert listed.operation == "ListFoundationModels"


async def test_list_models_failures_are_typed(bedrock: FakeBedrock) -> None:
    bedrock.models_error = ACCESS_DENIED
    with pytest.raises(ProviderAuthFailed):
        await provider(bedrock).list_models()
