"""Checks the fake model providers with the real SDKs, so app tests can trust the fakes."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import anthropic
import openai
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import MessageParam, ToolUnionParam
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam

from tests.fakes.llm_servers import (
    FakeLLM,
    Reply,
    ToolCallScript,
    argument_fragments,
    text_deltas,
)

TEXT = "The quick brown fox jumps over the lazy dog, twice.\n"
SEARCH_ARGS = '{"query": "fox \\"quoted\\" caf\\u00e9", "limit": 3}'
SAVE_ARGS = '{"memory": {"kind": "fact", "tags": ["a", "b"]}, "pin": true}'
TOOLS: list[ChatCompletionToolUnionParam] = [
    {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {}}},
    }
    for name in ("search", "save")
]
ANTHROPIC_TOOLS: list[ToolUnionParam] = [
    {"name": name, "input_schema": {"type": "object", "properties": {}}}
    for name in ("search", "save")
]
USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
CLAUDE_USER: list[MessageParam] = [{"role": "user", "content": "hi"}]


def two_tool_calls(text: str = "", stop: str | None = None, interleave: bool = False) -> Reply:
    return Reply(
        text=text,
        tool_calls=[
            ToolCallScript("search", SEARCH_ARGS, fragments=4, id="call_search"),
            ToolCallScript("save", SAVE_ARGS, fragments=5, id="call_save"),
        ],
        input_tokens=42,
        output_tokens=17,
        stop=stop,
        interleave_tool_calls=interleave,
    )


async def wait_for_disconnects(fake: FakeLLM, count: int) -> None:
    deadline = time.monotonic() + 5.0
    while fake.disconnects < count:
        assert time.monotonic() < deadline, f"disconnects={fake.disconnects}, wanted {count}"
        await asyncio.sleep(0.02)


def test_splitting_keeps_every_character() -> None:
    assert text_deltas("Hello, world!  bye ") == ["Hello,", " world!", "  bye "]
    assert "".join(text_deltas(TEXT)) == TEXT
    assert text_deltas("") == []
    assert text_deltas("  ") == ["  "]
    assert argument_fragments("abcdefg", 3) == ["abc", "de", "fg"]
    assert argument_fragments("ab", 5) == ["a", "b"]
    assert argument_fragments("", 3) == [""]


# --- OpenAI -----------------------------------------------------------------------------


@pytest.fixture
async def oai(fake_openai: FakeLLM) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=fake_openai.base_url, api_key="k", max_retries=0) as client:
        yield client


async def test_openai_streams_text(fake_openai: FakeLLM, oai: AsyncOpenAI) -> None:
    fake_openai.replies.append(Reply(text=TEXT))
    stream = await oai.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    deltas: list[str] = []
    finish: list[str | None] = []
    async for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        assert chunk.usage is None
        for choice in chunk.choices:
            if choice.delta.content:
                deltas.append(choice.delta.content)
            finish.append(choice.finish_reason)
    assert "".join(deltas) == TEXT
    assert len(deltas) == len(TEXT.split())
    assert finish[-1] == "stop"
    assert fake_openai.requests[0]["stream"] is True
    assert fake_openai.requests[0]["messages"] == USER
    assert fake_openai.request_headers[0]["authorization"] == "Bearer k"


async def test_openai_default_reply_and_non_streamed(
    fake_openai: FakeLLM, oai: AsyncOpenAI
) -> None:
    completion = await oai.chat.completions.create(model="gpt-test", messages=USER)
    assert completion.choices[0].message.content == "ok"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "gpt-test"

    fake_openai.replies.append(two_tool_calls(text="Let me look."))
    completion = await oai.chat.completions.create(model="gpt-test", messages=USER, tools=TOOLS)
    message = completion.choices[0].message
    assert message.content == "Let me look."
    assert completion.choices[0].finish_reason == "tool_calls"
    calls = [
        (c.id, c.function.name, c.function.arguments)
        for c in message.tool_calls or []
        if c.type == "function"
    ]
    assert calls == [("call_search", "search", SEARCH_ARGS), ("call_save", "save", SAVE_ARGS)]
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (42, 17)


async def test_openai_responses_whole_and_streamed(fake_openai: FakeLLM, oai: AsyncOpenAI) -> None:
    fake_openai.replies.append(two_tool_calls(text="Let me look."))
    response = await oai.responses.create(model="gpt-test", input="hi", instructions="Be brief.")
    assert response.output_text == "Let me look."
    calls = [(i.call_id, i.name, i.arguments) for i in response.output if i.type == "function_call"]
    assert calls == [("call_search", "search", SEARCH_ARGS), ("call_save", "save", SAVE_ARGS)]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (42, 17)
    assert fake_openai.requests[0] == {
        "model": "gpt-test",
        "input": "hi",
        "instructions": "Be brief.",
    }

    fake_openai.replies.append(two_tool_calls(text=TEXT))
    async with oai.responses.stream(model="gpt-test", input="hi") as stream:
        deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert "".join(deltas) == TEXT
    assert len(deltas) == len(TEXT.split())
    assert final.output_text == TEXT
    assert [i.arguments for i in final.output if i.type == "function_call"] == [
        SEARCH_ARGS,
        SAVE_ARGS,
    ]


@pytest.mark.parametrize("interleave", [False, True])
async def test_openai_streams_two_tool_calls_in_fragments(
    fake_openai: FakeLLM, oai: AsyncOpenAI, interleave: bool
) -> None:
    fake_openai.replies.append(two_tool_calls(interleave=interleave))
    fragments: dict[int, list[str]] = {0: [], 1: []}
    async with oai.chat.completions.stream(
        model="gpt-test",
        messages=USER,
        tools=TOOLS,
        stream_options={"include_usage": True},
    ) as stream:
        async for event in stream:
            if event.type == "tool_calls.function.arguments.delta" and event.arguments_delta:
                fragments[event.index].append(event.arguments_delta)
        final = await stream.get_final_completion()

    assert fragments == {0: argument_fragments(SEARCH_ARGS, 4), 1: argument_fragments(SAVE_ARGS, 5)}
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = [
        (call.id, call.type, call.function.name, call.function.arguments)
        for call in choice.message.tool_calls or []
    ]
    assert calls == [
        ("call_search", "function", "search", SEARCH_ARGS),
        ("call_save", "function", "save", SAVE_ARGS),
    ]
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (42, 17)
    assert final.usage.total_tokens == 59


async def test_openai_malformed_arguments_arrive_verbatim(
    fake_openai: FakeLLM, oai: AsyncOpenAI
) -> None:
    broken = '{"query": "unterminated'
    fake_openai.replies.append(Reply(tool_calls=[ToolCallScript("search", broken)]))
    async with oai.chat.completions.stream(
        model="gpt-test",
        messages=USER,
        tools=TOOLS,
    ) as stream:
        final = await stream.get_final_completion()
    (call,) = final.choices[0].message.tool_calls or []
    assert call.function.arguments == broken
    assert call.id.startswith("call_")


async def test_openai_usage_only_when_asked(fake_openai: FakeLLM, oai: AsyncOpenAI) -> None:
    fake_openai.replies.append(Reply(text="hi there", input_tokens=7, output_tokens=2))
    stream = await oai.chat.completions.create(
        model="gpt-test",
        messages=USER,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (7, 2)
    assert all(chunk.usage is None for chunk in chunks[:-1])


async def test_openai_errors_raise_the_sdk_classes(fake_openai: FakeLLM) -> None:
    async with AsyncOpenAI(base_url=fake_openai.base_url, api_key="bad-key", max_retries=0) as bad:
        with pytest.raises(openai.AuthenticationError) as auth:
            await bad.chat.completions.create(model="gpt-test", messages=USER)
    assert auth.value.code == "invalid_api_key"

    fake_openai.replies += [
        Reply(status=429, error_message="slow down", retry_after=2),
        Reply(status=500),
    ]
    async with AsyncOpenAI(base_url=fake_openai.base_url, api_key="k", max_retries=0) as client:
        with pytest.raises(openai.RateLimitError) as limited:
            await client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
        with pytest.raises(openai.InternalServerError):
            await client.chat.completions.create(model="gpt-test", messages=USER)
    assert limited.value.status_code == 429
    assert limited.value.body == {
        "message": "slow down",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert limited.value.code == "rate_limit_exceeded"
    assert limited.value.response.headers["retry-after"] == "2"
    # The rejected request was recorded but took no scripted reply.
    assert len(fake_openai.requests) == 3
    assert fake_openai.replies == []


async def test_openai_lists_models(fake_openai: FakeLLM, oai: AsyncOpenAI) -> None:
    fake_openai.models = ["gpt-fake-1", "gpt-fake-2"]
    models = [model.id async for model in oai.models.list()]
    assert models == ["gpt-fake-1", "gpt-fake-2"]


async def test_openai_delay_times_out(fake_openai: FakeLLM, oai: AsyncOpenAI) -> None:
    fake_openai.replies.append(Reply(text="late", delay_seconds=5))
    with pytest.raises(openai.APITimeoutError):
        await oai.chat.completions.create(model="gpt-test", messages=USER, timeout=0.3)


async def test_openai_stall_counts_the_disconnect(fake_openai: FakeLLM, oai: AsyncOpenAI) -> None:
    fake_openai.replies.append(Reply(text=TEXT, stall_after_chunks=3))
    received: list[str] = []

    async def consume() -> None:
        stream = await oai.chat.completions.create(model="gpt-test", messages=USER, stream=True)
        async with stream:
            async for chunk in stream:
                received.append(chunk.choices[0].delta.content or "")

    task = asyncio.create_task(consume())
    deadline = time.monotonic() + 5
    while len(received) < 3:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.1)
    assert len(received) == 3  # the role chunk and two words, then nothing
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_for_disconnects(fake_openai, 1)


async def test_openai_non_streamed_stall_counts_the_disconnect(
    fake_openai: FakeLLM, oai: AsyncOpenAI
) -> None:
    fake_openai.replies.append(Reply(text="never", stall_after_chunks=0))
    with pytest.raises(openai.APITimeoutError):
        await oai.chat.completions.create(model="gpt-test", messages=USER, timeout=0.3)
    await wait_for_disconnects(fake_openai, 1)


# --- Anthropic --------------------------------------------------------------------------


@pytest.fixture
async def claude(fake_anthropic: FakeLLM) -> AsyncIterator[AsyncAnthropic]:
    async with AsyncAnthropic(
        base_url=fake_anthropic.base_url, api_key="k", max_retries=0
    ) as client:
        yield client


async def test_anthropic_streams_text(fake_anthropic: FakeLLM, claude: AsyncAnthropic) -> None:
    fake_anthropic.replies.append(Reply(text=TEXT, input_tokens=12, output_tokens=9))
    async with claude.messages.stream(
        model="claude-test",
        max_tokens=100,
        messages=CLAUDE_USER,
    ) as stream:
        deltas = [text async for text in stream.text_stream]
        final = await stream.get_final_message()
    assert "".join(deltas) == TEXT
    assert len(deltas) == len(TEXT.split())
    assert final.content[0].type == "text"
    assert final.content[0].text == TEXT
    assert final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (12, 9)
    assert fake_anthropic.requests[0]["stream"] is True
    assert fake_anthropic.request_headers[0]["authorization"] == "Bearer k"
    assert fake_anthropic.request_headers[0]["anthropic-version"]


async def test_anthropic_streams_two_tool_calls_in_fragments(
    fake_anthropic: FakeLLM, claude: AsyncAnthropic
) -> None:
    fake_anthropic.replies.append(two_tool_calls(text="Looking."))
    partial: dict[int, list[str]] = {}
    async with claude.messages.stream(
        model="claude-test",
        max_tokens=100,
        messages=CLAUDE_USER,
        tools=ANTHROPIC_TOOLS,
    ) as stream:
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                partial.setdefault(event.index, []).append(event.delta.partial_json)
        final = await stream.get_final_message()

    assert partial == {1: argument_fragments(SEARCH_ARGS, 4), 2: argument_fragments(SAVE_ARGS, 5)}
    assert "".join(partial[1]) == SEARCH_ARGS
    assert "".join(partial[2]) == SAVE_ARGS
    assert final.stop_reason == "tool_use"
    text, search, save = final.content
    assert text.type == "text"
    assert text.text == "Looking."
    assert search.type == "tool_use"
    assert save.type == "tool_use"
    assert (search.id, search.name, search.input) == (
        "call_search",
        "search",
        json.loads(SEARCH_ARGS),
    )
    assert (save.id, save.name, save.input) == ("call_save", "save", json.loads(SAVE_ARGS))
    assert (final.usage.input_tokens, final.usage.output_tokens) == (42, 17)


async def test_anthropic_non_streamed(fake_anthropic: FakeLLM, claude: AsyncAnthropic) -> None:
    fake_anthropic.replies.append(two_tool_calls(stop="max_tokens"))
    message = await claude.messages.create(
        model="claude-test",
        max_tokens=50,
        messages=CLAUDE_USER,
    )
    assert message.stop_reason == "max_tokens"
    assert [block.type for block in message.content] == ["tool_use", "tool_use"]
    search = message.content[0]
    assert search.type == "tool_use"
    assert search.input == json.loads(SEARCH_ARGS)
    assert (message.usage.input_tokens, message.usage.output_tokens) == (42, 17)

    message = await claude.messages.create(
        model="claude-test",
        max_tokens=50,
        messages=CLAUDE_USER,
    )
    (ok,) = message.content
    assert ok.type == "text"
    assert ok.text == "ok"


async def test_anthropic_errors_raise_the_sdk_classes(fake_anthropic: FakeLLM) -> None:
    async with AsyncAnthropic(
        base_url=fake_anthropic.base_url, api_key="bad-key", max_retries=0
    ) as bad:
        with pytest.raises(anthropic.AuthenticationError) as auth:
            await bad.messages.create(
                model="claude-test",
                max_tokens=5,
                messages=CLAUDE_USER,
            )
    body = auth.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"] == {"type": "authentication_error", "message": "invalid x-api-key"}
    assert body["request_id"] == auth.value.response.headers["request-id"]

    fake_anthropic.replies += [
        Reply(status=429, error_message="slow down", retry_after=1.5),
        Reply(status=529),
    ]
    async with AsyncAnthropic(
        base_url=fake_anthropic.base_url, api_key="k", max_retries=0
    ) as client:
        with pytest.raises(anthropic.RateLimitError) as limited:
            async with client.messages.stream(
                model="claude-test",
                max_tokens=5,
                messages=CLAUDE_USER,
            ) as stream:
                await stream.get_final_message()
        with pytest.raises(anthropic.OverloadedError):
            await client.messages.create(
                model="claude-test",
                max_tokens=5,
                messages=CLAUDE_USER,
            )
    assert limited.value.status_code == 429
    assert limited.value.response.headers["retry-after"] == "1.5"
    assert "slow down" in limited.value.message


async def test_anthropic_lists_models(fake_anthropic: FakeLLM, claude: AsyncAnthropic) -> None:
    page = await claude.models.list()
    assert [model.id for model in page.data] == ["claude-sonnet-4-6", "claude-haiku-4-5"]
    assert page.has_more is False
    fake_anthropic.models = ["claude-a", "claude-b"]
    assert [model.id async for model in claude.models.list()] == ["claude-a", "claude-b"]


async def test_anthropic_stall_counts_the_disconnect(
    fake_anthropic: FakeLLM, claude: AsyncAnthropic
) -> None:
    fake_anthropic.replies.append(Reply(text=TEXT, stall_after_chunks=4))
    seen: list[str] = []

    async def consume() -> None:
        async with claude.messages.stream(
            model="claude-test",
            max_tokens=5,
            messages=CLAUDE_USER,
        ) as stream:
            async for event in stream:
                seen.append(event.type)

    task = asyncio.create_task(consume())
    deadline = time.monotonic() + 5
    # message_start, ping (skipped by the SDK), content_block_start, one text delta.
    while "text" not in seen:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_for_disconnects(fake_anthropic, 1)
