"""A run as Server-Sent Events (sse-starlette).

The run works in its own task and hands events over a queue. When the client goes away,
sse-starlette stops the stream and the runtime is told (`Runtime.left`): the task is
cancelled, at once or after a grace while someone follows the run elsewhere, and stores
what the model had produced, marked interrupted, itself. Event ids are the numbers the
run's journal gives them, so `GET /runs/{id}/events` resumes from any of them."""

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Message, Receive, Scope, Send

from api.runs.models import StoredEvent
from api.runtime import events
from api.runtime.events import RunCompleted, RunEvent, RunFailed
from api.runtime.runner import PreparedTurn

HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
RUN_ID_HEADER = "Run-Id"


def run_headers(prepared: PreparedTurn) -> Mapping[str, str]:
    return {RUN_ID_HEADER: prepared.turn.state.run_id}


class LeanEventSource(EventSourceResponse):
    """sse-starlette's response, sending each event without a timeout scope of its own
    (none is set: a client that stops reading is found by the disconnect listener and
    the keep-alive pings) and given events as ready-made bytes (`frame`): per event, the
    framework's work is the send itself."""

    async def _send_with_timeout(self, send: Send, message: Message) -> None:
        if self.send_timeout is not None:
            await super()._send_with_timeout(send, message)
            return
        await send(message)


class TurnStream(LeanEventSource):
    """A turn's stream: `sent`, what the client gets of the run's events (`relay` here; the
    OpenAI-compatible endpoint sends chunks of its own). If the turn never started (the
    client left before its stream did, or its task was stopped before it ran), its
    conversation is freed when the response ends, rather than held until the lease lapses."""

    def __init__(
        self,
        prepared: PreparedTurn,
        sent: AsyncIterator[bytes | ServerSentEvent],
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
) -> EventSourceResponse:
    return TurnStream(
        prepared,
        relay(prepared, grace_seconds=grace_seconds),
        ping_seconds=ping_seconds,
        headers=run_headers(prepared),
    )


def frame(number: int, event: str, data: str) -> bytes:
    """One event as sent. `data` is JSON text on one line (json.dumps escapes line breaks
    inside strings), so it needs none of the splitting sse-starlette does for any text."""
    return f"id: {number}\r\nevent: {event}\r\ndata: {data}\r\n\r\n".encode()


def encode(number: int, event: RunEvent) -> bytes:
    return frame(number, event.EVENT, event.json())


async def relay(prepared: PreparedTurn, *, grace_seconds: float) -> AsyncIterator[bytes]:
    """The run's events as they come, numbered as its journal numbers them."""
    number = 0
    async with contextlib.aclosing(run_events(prepared, grace_seconds=grace_seconds)) as produced:
        async for event in produced:
            number += 1
            yield encode(number, event)


async def run_events(
    prepared: PreparedTurn, *, grace_seconds: float
) -> AsyncGenerator[RunEvent, None]:
    """The run, started in its own task, and its events as they come; a run that ends
    without saying how (the server shutting down mid-turn) ends as interrupted. Closing
    this early (the client left) tells the runtime, which stops the run or gives it grace."""
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
        while (event := await queue.get()) is not None:
            last = event
            yield event
        if not isinstance(last, RunCompleted | RunFailed):  # the run broke off: say so
            for event in events.interrupted(run_id):
                yield event
    finally:
        runtime.left(task, run_id, grace_seconds=grace_seconds)


def replayed_stream(
    run_id: str, stored: AsyncIterator[StoredEvent], *, ping_seconds: float
) -> EventSourceResponse:
    """A run's events as its journal kept them (the same ids and data), for a client that
    resumes or follows it."""

    async def sent() -> AsyncIterator[bytes]:
        async for event in stored:
            yield frame(event.number, event.event, event.data)

    return LeanEventSource(sent(), ping=ping_seconds, headers={**HEADERS, RUN_ID_HEADER: run_id})
