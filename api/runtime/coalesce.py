"""Text deltas that arrive close together become one: fewer SSE events to send and to keep
in the run's journal, the same text. Written by hand because it is a few lines of asyncio
no library offers: the provider's stream is read by a task of its own into a queue, and
the turn takes from the queue a delta and whatever text is already there, or arrives
before the window after the last text sent has passed (a delta later than that is not
held). The first delta is never held back (the events up to it are passed on as they
come, before the reader starts), and nothing but text is merged."""

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import cast

from api.llm.types import LLMEvent, TextDelta


@dataclass(frozen=True)
class _Failed:
    error: BaseException


_END = object()


async def coalesced(
    source: AsyncIterator[LLMEvent], window_seconds: float
) -> AsyncGenerator[LLMEvent, None]:
    reader: asyncio.Future[None] | None = None
    try:
        # Up to the first text the events pass straight through: no task or queue stands
        # between the provider and the turn on the way to its first words.
        while True:
            try:
                event = await anext(source)
            except StopAsyncIteration:
                return
            yield event
            if isinstance(event, TextDelta):
                break
        queue: asyncio.Queue[object] = asyncio.Queue()

        async def read() -> None:
            try:
                async for event in source:
                    queue.put_nowait(event)
            except Exception as e:  # the provider's failure, raised where the turn reads
                queue.put_nowait(_Failed(e))
            finally:
                queue.put_nowait(_END)

        reader = asyncio.ensure_future(read())
        loop = asyncio.get_running_loop()
        held: object | None = None
        sent_at = loop.time()  # when the last text went
        while True:
            item = held if held is not None else await queue.get()
            held = None
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
            if not isinstance(item, TextDelta):
                yield cast(LLMEvent, item)
                continue
            texts = [item.text]
            # What was read already joins it; more is waited for only until the window
            # after the last text sent has passed. A delta coming later than that (a model
            # streaming a token every 20 ms, say) goes at once, with no timer set.
            deadline = sent_at + window_seconds
            while True:
                try:
                    following = queue.get_nowait()
                except asyncio.QueueEmpty:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        break
                    try:
                        async with asyncio.timeout(remaining):
                            following = await queue.get()
                    except TimeoutError:
                        break
                if not isinstance(following, TextDelta):
                    held = following
                    break
                texts.append(following.text)
            yield TextDelta("".join(texts)) if len(texts) > 1 else item
            sent_at = loop.time()
    finally:
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
