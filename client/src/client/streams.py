"""Watching an SDK's own stream object without replacing it: the stream's item iterator is
wrapped and its `close` shadowed on the instance, so the caller still holds the SDK's
`Stream` / `AsyncStream` (a context manager, iterable once, with `.response`), and the
SDKs' helpers built on it (`chat.completions.stream()`, `responses.stream()`,
`messages.stream()`) read through the watch as well.

An observer reports once: when the stream is read to its end, when it is closed (by
`close()`, its `with` block, or a helper's), when it breaks off, or, for a stream still
open, when its learning() context ends. Nothing here refers back to the stream, so a
dropped stream is freed as promptly as it would be without the watch."""

import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from client.apis import Accumulator, Reply

Report = Callable[["Observer", Reply | None, bool, str | None], None]


class Observer:
    def __init__(self, accumulator: Accumulator, report: Report) -> None:
        self._accumulator = accumulator
        self._report = report
        self._lock = threading.Lock()
        self._ended = False
        self._error: str | None = None

    def item(self, item: object) -> None:
        if self._ended or self._error is not None:
            return
        try:
            self._accumulator.add(item)
        except Exception as e:  # a reply it cannot read is a capture failure, not the caller's
            self._error = f"the streamed reply could not be read: {e!r}"

    def end(self, *, closed_early: bool) -> None:
        """Report what arrived; `closed_early`: the stream did not run to its end (it is
        interrupted unless the model's end had already arrived)."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
        reply: Reply | None = None
        error = self._error
        if error is None:
            try:
                reply = self._accumulator.reply()
            except Exception as e:
                error = f"the streamed reply could not be read: {e!r}"
        interrupted = closed_early and not self._accumulator.finished
        self._report(self, reply, interrupted, error)


def tap(stream: Any, observer: Observer) -> None:
    """Watch a synchronous SDK stream (openai.Stream, anthropic.Stream)."""
    inner: Iterator[object] = stream._iterator
    close: Callable[[Any], None] = type(stream).close

    def observed() -> Iterator[object]:
        completed = False
        try:
            for item in inner:
                observer.item(item)
                yield item
            completed = True
        finally:
            observer.end(closed_early=not completed)

    ref = weakref.ref(stream)

    def closing() -> None:
        try:
            if (alive := ref()) is not None:
                close(alive)
        finally:
            observer.end(closed_early=True)

    stream._iterator = observed()
    stream.close = closing


def tap_async(stream: Any, observer: Observer) -> None:
    """Watch an asynchronous SDK stream (openai.AsyncStream, anthropic.AsyncStream)."""
    inner: AsyncIterator[object] = stream._iterator
    close: Callable[[Any], Awaitable[None]] = type(stream).close

    async def observed() -> AsyncIterator[object]:
        completed = False
        try:
            async for item in inner:
                observer.item(item)
                yield item
            completed = True
        finally:
            observer.end(closed_early=not completed)

    ref = weakref.ref(stream)

    async def closing() -> None:
        try:
            if (alive := ref()) is not None:
                await close(alive)
        finally:
            observer.end(closed_early=True)

    stream._iterator = observed()
    stream.close = closing
