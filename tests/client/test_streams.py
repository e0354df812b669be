"""Streamed chat completions (sync and async) inside learning(): the caller gets the SDK's
own stream object; the reply is stored when the stream ends, and what arrived is stored,
marked interrupted, when it is closed early or breaks off."""

import asyncio
import time
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from client import learning
from tests.client.conftest import ask, memory_in
from tests.client.server_process import MemoryServer
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript

STORY = "Once upon a time there was a memory server that never forgot anything at all."


def wait_for_disconnect(fake: FakeLLM) -> None:
    deadline = time.monotonic() + 10
    while fake.disconnects < 1:
        assert time.monotonic() < deadline, "the stream was never closed"
        time.sleep(0.02)


def assistant(server: MemoryServer, agent: str) -> dict[str, Any]:
    (reply,) = [m for m in server.messages(agent) if m["role"] == "assistant"]
    return reply


def question_of(server: MemoryServer, agent: str) -> dict[str, Any]:
    (question,) = [m for m in server.messages(agent) if m["role"] == "user"]
    return question


def test_a_stream_read_to_its_end_is_stored_whole(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("I collect old maps."))
    fake_openai.replies.append(Reply(text=STORY))

    with learning(agent, server_url=server.url) as memory:
        stream = oai.chat.completions.create(
            model="m", messages=ask("Tell me a story about maps."), stream=True
        )
        assert type(stream) is openai.Stream
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)

    assert text == STORY
    assert "I collect old maps." in memory_in(fake_openai.requests[-1])
    assert memory.stored == 2
    stored = server.messages(agent)[-2:]
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "Tell me a story about maps."),
        ("assistant", STORY),
    ]
    assert stored[1]["metadata"]["stream"] is True
    assert "interrupted" not in stored[1]["metadata"]


def test_a_stream_closed_early_stores_what_arrived_marked_interrupted(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    # The role, then "Once", " upon", " a"; then the model hangs until the client leaves.
    fake_openai.replies.append(Reply(text=STORY, stall_after_chunks=4))

    with learning(agent, server_url=server.url, capture_only=True):
        with oai.chat.completions.create(
            model="m", messages=ask("Tell me a story."), stream=True
        ) as stream:
            chunks = [next(stream) for _ in range(4)]
        wait_for_disconnect(fake_openai)

    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Once upon a"
    reply = assistant(server, agent)
    assert reply["content"] == "Once upon a"
    assert reply["metadata"]["interrupted"] is True
    question = question_of(server, agent)
    assert question["content"] == "Tell me a story."
    assert "interrupted" not in question["metadata"]  # the reply was cut, not the question
    assert question["metadata"]["stream"] is True


def test_a_stream_closed_after_the_model_finished_is_not_interrupted(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    fake_openai.replies.append(Reply(text="Short answer."))

    with learning(agent, server_url=server.url, capture_only=True):
        stream = oai.chat.completions.create(model="m", messages=ask("Be short."), stream=True)
        for chunk in stream:
            if chunk.choices and chunk.choices[0].finish_reason:
                break  # [DONE] is never read
        stream.close()

    reply = assistant(server, agent)
    assert reply["content"] == "Short answer."
    assert "interrupted" not in reply["metadata"]


def test_a_stream_broken_off_by_the_provider_keeps_what_arrived(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    fake_openai.replies.append(Reply(text=STORY, drop_after_chunks=3))

    with learning(agent, server_url=server.url, capture_only=True) as memory:
        stream = oai.chat.completions.create(model="m", messages=ask("Go on."), stream=True)
        with pytest.raises(openai.APIError):
            for _ in stream:
                pass

    assert memory.capture_failures == 0
    reply = assistant(server, agent)
    assert reply["content"] == "Once upon"
    assert reply["metadata"]["interrupted"] is True
    assert "interrupted" not in question_of(server, agent)["metadata"]


def test_a_stream_left_open_is_stored_when_the_context_ends(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    fake_openai.replies.append(Reply(text=STORY, stall_after_chunks=3))

    with learning(agent, server_url=server.url, capture_only=True):
        stream = oai.chat.completions.create(model="m", messages=ask("Start."), stream=True)
        next(stream), next(stream)
    stream.close()

    reply = assistant(server, agent)
    assert (reply["content"], reply["metadata"]["interrupted"]) == ("Once", True)


def test_streamed_tool_calls_are_captured(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    calls = [
        ToolCallScript("search", '{"q": "maps"}', id="call_1"),
        ToolCallScript("save", '{"note": "likes maps"}', fragments=5, id="call_2"),
    ]
    fake_openai.replies.append(Reply(text="Looking.", tool_calls=calls, interleave_tool_calls=True))

    with learning(agent, server_url=server.url, capture_only=True):
        for _ in oai.chat.completions.create(model="m", messages=ask("Find maps."), stream=True):
            pass

    reply = assistant(server, agent)
    assert reply["content"] == (
        'Looking.\n[tool call] search({"q": "maps"})\n[tool call] save({"note": "likes maps"})'
    )
    assert [c["id"] for c in reply["metadata"]["tool_calls"]] == ["call_1", "call_2"]


def test_the_stream_helper_reads_through_the_interceptor(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("My town is Ghent."))
    fake_openai.replies.append(Reply(text="You live in Ghent."))

    with (
        learning(agent, server_url=server.url),
        oai.chat.completions.stream(model="m", messages=ask("What is my town?")) as stream,
    ):
        final = stream.get_final_completion()

    assert final.choices[0].message.content == "You live in Ghent."
    assert "Ghent" in memory_in(fake_openai.requests[-1])
    assert server.said(agent)[-1] == ("assistant", "You live in Ghent.")


async def test_an_async_stream_read_to_its_end_is_stored(
    server: MemoryServer, agent: str, aoai: AsyncOpenAI, fake_openai: FakeLLM
) -> None:
    async with learning(agent, server_url=server.url):
        await aoai.chat.completions.create(model="m", messages=ask("I play the cello."))
    fake_openai.replies.append(Reply(text=STORY))

    async with learning(agent, server_url=server.url) as memory:
        stream = await aoai.chat.completions.create(
            model="m", messages=ask("What do I play?"), stream=True
        )
        assert type(stream) is openai.AsyncStream
        pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]

    assert "".join(pieces) == STORY
    assert "I play the cello." in memory_in(fake_openai.requests[-1])
    assert memory.stored == 2
    assert server.said(agent)[-1] == ("assistant", STORY)


async def test_an_async_stream_closed_early_is_stored_interrupted(
    server: MemoryServer, agent: str, aoai: AsyncOpenAI, fake_openai: FakeLLM
) -> None:
    fake_openai.replies.append(Reply(text=STORY, stall_after_chunks=5))

    async with learning(agent, server_url=server.url, capture_only=True):
        async with await aoai.chat.completions.create(
            model="m", messages=ask("A story, please."), stream=True
        ) as stream:
            seen = [await stream.__anext__() for _ in range(5)]
        await asyncio.to_thread(wait_for_disconnect, fake_openai)

    assert len(seen) == 5
    reply = assistant(server, agent)
    assert (reply["content"], reply["metadata"]["interrupted"]) == ("Once upon a time", True)


async def test_an_async_stream_closed_with_aclose_is_stored_interrupted(
    server: MemoryServer, agent: str, aoai: AsyncOpenAI, fake_openai: FakeLLM
) -> None:
    fake_openai.replies.append(Reply(text=STORY, stall_after_chunks=3))

    async with learning(agent, server_url=server.url, capture_only=True):
        stream = await aoai.chat.completions.create(model="m", messages=ask("Hi."), stream=True)
        await stream.__anext__()
        await stream.__anext__()
        await stream.aclose()

    reply = assistant(server, agent)
    assert (reply["content"], reply["metadata"]["interrupted"]) == ("Once", True)


async def test_the_async_stream_helper_reads_through_the_interceptor(
    server: MemoryServer, agent: str, aoai: AsyncOpenAI, fake_openai: FakeLLM
) -> None:
    fake_openai.replies.append(Reply(text="Helper text."))

    async with (
        learning(agent, server_url=server.url, capture_only=True),
        aoai.chat.completions.stream(model="m", messages=ask("Use the helper.")) as stream,
    ):
        final = await stream.get_final_completion()

    assert final.choices[0].message.content == "Helper text."
    assert server.said(agent) == [("user", "Use the helper."), ("assistant", "Helper text.")]
