"""Text deltas close together go out as one, the text exactly kept; the first is never held
back; nothing but text is merged; a failure and a stop still reach through."""

import asyncio
import time
from collections.abc import AsyncIterator, Sequence

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.llm.errors import ProviderUnavailable
from api.llm.types import Finish, LLMEvent, TextDelta, ToolCall, ToolCallEvent
from api.runtime.coalesce import coalesced
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.runtime.conftest import messages, new_conversation, running, send, use_openai

CALL = ToolCallEvent(ToolCall("c1", "core_memory_append", {"block": "human"}))


async def scripted(
    steps: Sequence[LLMEvent | float], closed: list[bool]
) -> AsyncIterator[LLMEvent]:
    """Events, with pauses (seconds) between them."""
    try:
        for step in steps:
            if isinstance(step, float):
                await asyncio.sleep(step)
            else:
                yield step
    finally:
        closed.append(True)


async def test_deltas_close_together_are_merged_and_the_text_kept() -> None:
    closed: list[bool] = []
    steps: list[LLMEvent | float] = [
        TextDelta("Once"), TextDelta(" upon"), TextDelta(" a"),  # one network read
        0.1, TextDelta(" time"), CALL, TextDelta(","), TextDelta(" the end"), Finish("stop"),
    ]  # fmt: skip
    out = [e async for e in coalesced(scripted(steps, closed), 0.02)]
    assert out == [
        TextDelta("Once"),  # the first at once, as it came
        TextDelta(" upon a"),
        TextDelta(" time"),
        CALL,  # never merged, never moved
        TextDelta(", the end"),
        Finish("stop"),
    ]
    assert closed == [True]


async def test_a_delta_later_than_the_window_since_the_last_text_goes_at_once() -> None:
    """The window runs from the last text sent, not from the delta that arrives: one
    coming after it has passed is sent alone at once, not held for a window of its own
    (which would merge the one following close behind it)."""
    steps: list[LLMEvent | float] = [
        TextDelta("Once"),
        1.0, TextDelta(" upon"),  # twice the window after the last text sent...
        0.25, TextDelta(" a time"),  # ...and well inside a window starting at " upon"
        Finish("stop"),
    ]  # fmt: skip
    out = [e async for e in coalesced(scripted(steps, []), 0.5)]
    assert out == [TextDelta("Once"), TextDelta(" upon"), TextDelta(" a time"), Finish("stop")]


async def test_the_first_delta_is_not_held_back() -> None:
    steps: list[LLMEvent | float] = [TextDelta("Hi"), 0.5, TextDelta(" there"), Finish("stop")]
    start = time.monotonic()
    source = coalesced(scripted(steps, []), 5.0)  # a long window: later deltas may wait
    first = await anext(source)
    assert first == TextDelta("Hi")
    assert time.monotonic() - start < 0.4  # before the second delta even exists
    assert [e async for e in source] == [TextDelta(" there"), Finish("stop")]


async def test_a_provider_failure_comes_through_after_the_text() -> None:
    async def failing() -> AsyncIterator[LLMEvent]:
        yield TextDelta("Par")
        yield TextDelta("tial")
        raise ProviderUnavailable("gone")

    got: list[LLMEvent] = []

    async def consume() -> None:
        async for event in coalesced(failing(), 0.01):
            got.append(event)

    with pytest.raises(ProviderUnavailable):
        await consume()
    assert "".join(e.text for e in got if isinstance(e, TextDelta)) == "Partial"


async def test_a_turn_that_stops_closes_the_provider_stream() -> None:
    closed: list[bool] = []
    steps: list[LLMEvent | float] = [TextDelta("a"), 10.0, TextDelta("b")]

    async def consume() -> None:
        async for _ in coalesced(scripted(steps, closed), 0.01):
            pass

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed == [True]


STORY = " ".join(f"word{i}" for i in range(40))


def told_a_story(client: TestClient, fake_openai: FakeLLM) -> tuple[list[str], str]:
    """A turn whose model sends forty words at once (the fake writes them together): the
    text deltas the client got, and the answer stored."""
    agent_id = use_openai(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)
    fake_openai.replies.append(Reply(text=STORY))
    found = send(client, conversation_id, "Tell me a story")
    deltas = [e.data["text"] for e in found if e.name == "text.delta"]
    stored: str = messages(client, conversation_id)[-1]["content"]
    return deltas, stored


def test_a_streamed_turn_sends_fewer_deltas_with_the_same_text(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    """Forty words read at once go out in fewer events, and the text the client joins is
    the message stored."""
    deltas, stored = told_a_story(client, fake_openai)
    assert 1 <= len(deltas) < 40
    assert "".join(deltas) == STORY == stored


def test_a_window_of_0_sends_every_delta_as_it_came(
    settings: Settings, clock: FrozenClock, fake_openai: FakeLLM
) -> None:
    """SSE_COALESCE_MS=0 turns merging off: the same forty words go out as forty events."""
    with running(settings.model_copy(update={"sse_coalesce_ms": 0}), clock) as client:
        deltas, stored = told_a_story(client, fake_openai)
    assert deltas == ["word0"] + [f" word{i}" for i in range(1, 40)]
    assert stored == STORY
