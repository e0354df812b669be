"""A run as Server-Sent Events: a response of our own on Starlette's StreamingResponse.

The run works in its own task and hands events over a queue. When the client goes away,
the stream stops and the runtime is told (`Runtime.left`): the task is cancelled, at once
or after a grace while someone follows the run elsewhere, and stores what the model had
produced, marked interrupted, itself. Event ids are the numbers the run's journal gives
them, so `GET /runs/{id}/events` resumes from any of them."""

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterator, Mapping
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from api.journal import events
from api.journal.events import RunCompleted, RunEvent, RunFailed
from api.journal.models import StoredEvent
from api.runtime.runner import PreparedTurn

HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
RUN_ID_HEADER = "Run-Id"
LISTENER_GRACE_SECONDS = 1.0
END_SECONDS = 1.0  # for the end of a stream cut short to be sent
EXIT_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # what uvicorn stops on

log = logging.getLogger(__name__)


def run_headers(prepared: PreparedTurn) -> Mapping[str, str]:
    return {RUN_ID_HEADER: prepared.turn.state.run_id}


def sse_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """What every event stream answers with (as sse-starlette's did, which this replaced):
    no caching unless the caller says otherwise, and no buffering by a proxy."""
    sent = dict(headers)
    sent.setdefault("Cache-Control", "no-store")
    sent["Connection"] = "keep-alive"
    sent["X-Accel-Buffering"] = "no"
    return sent


class EventStream(StreamingResponse):
    """Events, ready-made bytes each (`frame`), sent by plain asyncio.

    Two tasks run a stream, the events and a disconnect listener, and neither is cancelled
    when the stream ends: the listener ends by itself, as the server answers `receive()`
    with `http.disconnect` once the response is complete. Pings are a timer. Only a client
    that leaves, a server told to stop (`OPEN`) or the request's own cancellation cancels
    anything. (sse-starlette's response, used before, ran four tasks in an anyio task group
    and cancelled three when the stream ended; anyio keeps a cancelled task's exception in
    a frame of its own traceback: a reference cycle holding the stream, and through it the
    whole turn, until the garbage collector found it. At 500 concurrent turns that was 150
    objects a turn and collections of up to 120 ms.) No timeout is set on a send: a client
    that stops reading is found by the disconnect listener and the pings. HEAD gets the
    headers alone: the stream never starts. Starlette's own `__call__` is not used: under
    ASGI 2.4 it hears no disconnect (a client that leaves while the model is silent would
    go unnoticed until a send failed), and before 2.4 it runs an anyio task group too."""

    media_type = "text/event-stream"

    def __init__(
        self,
        content: AsyncIterable[bytes],
        *,
        ping: float,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(content, headers=sse_headers(headers or {}))
        self.ping_interval = ping
        self.active = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"].upper() == "HEAD":
            start = {"status": self.status_code, "headers": self.raw_headers}
            await send({"type": "http.response.start", **start})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        await _Streaming(self, send).run(receive)


class _Streaming:
    """One stream: its events sent until they end, the client leaves or the server shuts
    down."""

    def __init__(self, response: EventStream, send: Send) -> None:
        self.response = response
        self.send = send
        self.loop = asyncio.get_running_loop()
        self.events: asyncio.Task[None] | None = None
        self.ping: asyncio.TimerHandle | None = None
        self.pinging: asyncio.Task[None] | None = None

    async def run(self, receive: Receive) -> None:
        response = self.response
        await self.send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": response.raw_headers,
            }
        )
        self.events = streaming = self.loop.create_task(self._events(), name="events")
        listening = self.loop.create_task(
            self._listen(receive), name="listening for the client's disconnect"
        )
        OPEN.add(self)
        if response.ping_interval > 0:
            self.ping = self.loop.call_later(response.ping_interval, self._ping)
        ended = False
        try:
            try:
                await asyncio.wait({streaming})
            finally:
                response.active = False
                OPEN.discard(self)
                if self.ping is not None:
                    self.ping.cancel()
            if streaming.cancelled():
                # The client left (the server drops this) or the server is stopping: the
                # response ends whole, so that a client still there sees a clean end.
                complete = await self._end()
            else:
                complete = streaming.exception() is None  # its last send ended it
            if complete:
                await _ended(listening)
            ended = True
        finally:
            # Whatever is still running (this request's task was cancelled, or the
            # response could not be completed) stops here; what failed is said.
            left = {t for t in (streaming, listening, self.pinging) if t and not t.done()}
            for task in left:
                task.cancel()
            if left:
                await asyncio.wait(left)
            # The events' own failure is raised below, unless this is left by another.
            for finished in (listening, self.pinging, None if ended else streaming):
                _log_failure(finished)
            self.events = self.pinging = None  # the tasks' tracebacks hold this object
        error = None if streaming.cancelled() else streaming.exception()
        del streaming, listening  # out of this frame, which the error's traceback holds
        if error is not None:
            try:
                raise error
            finally:
                del error

    async def _end(self) -> bool:
        """The response's end sent, unless the client reads nothing any more (its socket
        full, the send waits): a stream that is cut off must not hold a shutdown."""
        try:
            final = self.send({"type": "http.response.body", "body": b"", "more_body": False})
            async with asyncio.timeout(END_SECONDS):
                await final
        except Exception:
            return False
        return True

    async def _events(self) -> None:
        response = self.response
        body = response.body_iterator
        try:
            async for data in body:
                await self.send({"type": "http.response.body", "body": data, "more_body": True})
        except BaseException:
            # A send that failed (or was cancelled) leaves the body suspended at a yield:
            # closed now, its cleanup runs before the error goes on, and neither the
            # listener nor a shutdown cuts it short.
            response.active = False
            aclose = getattr(body, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:
                    log.warning("closing a stream's events failed", exc_info=True)
            raise
        response.active = False
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _listen(self, receive: Receive) -> None:
        try:
            while self.response.active:
                if (await receive())["type"] == "http.disconnect":
                    return
        finally:  # the client left, or cannot be heard any more: the stream stops
            self.set()

    def set(self) -> None:
        """The client left, or the server is shutting down: the events stop, and the
        body's generator is closed by the cancellation."""
        if self.events is not None and not self.events.done() and self.response.active:
            self.response.active = False
            self.events.cancel()

    def _ping(self) -> None:
        response = self.response
        if not response.active:
            return
        if self.pinging is None or self.pinging.done():  # one at a time: a slow reader
            ping = f": ping - {datetime.now(UTC)}\r\n\r\n".encode()  # a comment: ignored
            self.pinging = self.loop.create_task(self._send_ping(ping), name="ping")
        self.ping = self.loop.call_later(response.ping_interval, self._ping)

    async def _send_ping(self, ping: bytes) -> None:
        # A ping waiting for a slow reader when the response ends is refused by the
        # server ("after response already completed"): caught here with the rest.
        try:
            if self.response.active:
                await self.send({"type": "http.response.body", "body": ping, "more_body": True})
        except Exception:  # the client cannot be written to: the stream stops
            log.debug("a keep-alive ping could not be sent", exc_info=True)
            self.set()


async def _ended(listening: "asyncio.Task[None]") -> None:
    """The disconnect listener, done, once the response is complete: it ends by itself
    (one that a server never tells is cancelled after a grace, by the caller)."""
    if not listening.done():
        await asyncio.wait({listening}, timeout=LISTENER_GRACE_SECONDS)


def _log_failure(task: "asyncio.Task[None] | None") -> None:
    if task is None or not task.done() or task.cancelled():
        return
    if (error := task.exception()) is not None:
        log.warning("a stream's %s failed", task.get_name(), exc_info=error)


class OpenStreams:
    """The streams open in this process. uvicorn waits for open connections before it
    stops, and tells them nothing: a stream the model holds open would hold the process.
    Told to stop, every open stream ends at once, and so does any that starts after."""

    def __init__(self) -> None:
        self._open: set[_Streaming] = set()
        self.stopping = False

    def add(self, stream: _Streaming) -> None:
        self._open.add(stream)
        if self.stopping:
            stream.loop.call_soon(stream.set)

    def discard(self, stream: _Streaming) -> None:
        self._open.discard(stream)

    def stop(self) -> None:
        self.stopping = True
        for stream in list(self._open):
            stream.loop.call_soon_threadsafe(stream.set)  # each on its own loop


OPEN = OpenStreams()


@contextlib.contextmanager
def streams_end_on_exit_signals() -> Iterator[None]:
    """For the app's life (its lifespan): the signals the server stops on (SIGINT,
    SIGTERM) end the open streams too, then go to the server's own handler.

    uvicorn handles them with `signal.signal` in the main thread, before it starts the
    app, and puts back what was there when it is done; this adds to its handler rather
    than replacing it, and only where a handler is set (none is when the app runs off the
    main thread, or in a process nobody serves from). sse-starlette, used before, found
    the same moment by patching uvicorn's `Server.handle_exit` and, where that came too
    late (the workers of `--workers N` import the app after the handler is set), by
    reading uvicorn's server off the signal handler every 0.5 s."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    added: dict[signal.Signals, tuple[Any, Any]] = {}
    for number in EXIT_SIGNALS:
        before = signal.getsignal(number)
        if not callable(before):  # the default, ignored, or not set from Python
            continue

        def handler(received: int, frame: FrameType | None, before: Any = before) -> None:
            # Raised here, an error would land in whatever the main thread was running: a
            # loop closed already (this handler left in place by a later one) is passed over.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(OPEN.stop)
            before(received, frame)

        signal.signal(number, handler)
        added[number] = (handler, before)
    try:
        yield
    finally:
        for number, (handler, before) in added.items():
            if signal.getsignal(number) is handler:  # unless someone has replaced it since
                signal.signal(number, before)
        OPEN.stopping = False


class TurnStream(EventStream):
    """A turn's stream: `sent`, what the client gets of the run's events (`relay` here; the
    OpenAI-compatible endpoint sends chunks of its own). If the turn never started (the
    client left before its stream did, or its task was stopped before it ran), its
    conversation is freed when the response ends, rather than held until the lease lapses."""

    def __init__(
        self,
        prepared: PreparedTurn,
        sent: AsyncIterator[bytes],
        *,
        ping_seconds: float,
        headers: Mapping[str, str],
    ):
        super().__init__(sent, ping=ping_seconds, headers={**HEADERS, **headers})
        self.prepared = prepared

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            task = self.prepared.task
            if task is not None and not self.prepared.began:  # stopped before it ran, or
                await asyncio.wait({task})  # about to run: see which
            await self.prepared.abandon()


def event_stream(
    prepared: PreparedTurn, *, ping_seconds: float, grace_seconds: float = 0.0
) -> EventStream:
    return TurnStream(
        prepared,
        relay(prepared, grace_seconds=grace_seconds),
        ping_seconds=ping_seconds,
        headers=run_headers(prepared),
    )


def frame(number: int, event: str, data: str) -> bytes:
    """One event as sent. `data` is JSON text on one line (json.dumps escapes line breaks
    inside strings), so it needs no splitting into several `data:` lines."""
    return f"id: {number}\r\nevent: {event}\r\ndata: {data}\r\n\r\n".encode()


def encode(number: int, event: RunEvent) -> bytes:
    return frame(number, event.EVENT, event.json())


async def relay(prepared: PreparedTurn, *, grace_seconds: float) -> AsyncIterator[bytes]:
    """The run's events as they come, numbered as its journal numbers them: those ready
    together (a loop busy with other turns) go as one send, one write to the socket."""
    number = 0
    batches = run_event_batches(prepared, grace_seconds=grace_seconds)
    async with contextlib.aclosing(batches) as produced:
        async for batch in produced:
            frames = []
            for event in batch:
                number += 1
                frames.append(encode(number, event))
            yield b"".join(frames)


async def run_events(
    prepared: PreparedTurn, *, grace_seconds: float
) -> AsyncGenerator[RunEvent, None]:
    """`run_event_batches`, one event at a time."""
    batches = run_event_batches(prepared, grace_seconds=grace_seconds)
    async with contextlib.aclosing(batches) as produced:
        async for batch in produced:
            for event in batch:
                yield event


async def run_event_batches(
    prepared: PreparedTurn, *, grace_seconds: float
) -> AsyncGenerator[list[RunEvent], None]:
    """The run, started in its own task, and its events as they come, all those ready at
    once together; a run that ends without saying how (the server shutting down mid-turn)
    ends as interrupted. Closing this early (the client left) tells the runtime, which
    stops the run or gives it grace."""
    queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async with contextlib.aclosing(prepared.stream()) as produced:
                async for event in produced:
                    queue.put_nowait(event)
        finally:
            queue.put_nowait(None)

    runtime = prepared.runtime
    run_id = prepared.turn.state.run_id
    task = prepared.task = runtime.start(pump())
    last: RunEvent | None = None
    try:
        ended = False
        while not ended:
            batch = [await queue.get()]
            while not queue.empty():
                batch.append(queue.get_nowait())
            ended = batch[-1] is None  # the pump's last word
            ready = [event for event in batch if event is not None]
            if ready:
                last = ready[-1]
                yield ready
        if not isinstance(last, RunCompleted | RunFailed):  # the run broke off: say so
            yield list(events.interrupted(run_id))
    finally:
        runtime.left(task, run_id, grace_seconds=grace_seconds)


def replayed_stream(
    run_id: str, stored: AsyncIterator[StoredEvent], *, ping_seconds: float
) -> EventStream:
    """A run's events as its journal kept them (the same ids and data), for a client that
    resumes or follows it."""

    async def sent() -> AsyncIterator[bytes]:
        async for event in stored:
            yield frame(event.number, event.event, event.data)

    return EventStream(sent(), ping=ping_seconds, headers={**HEADERS, RUN_ID_HEADER: run_id})
