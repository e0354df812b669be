"""A run as Server-Sent Events (sse-starlette).

The run works in its own task and hands events over a queue. When the client goes away,
sse-starlette stops the stream and the task is cancelled: the LLM request is closed, and
what the model had produced is stored, marked interrupted, by the task itself."""

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

from sse_starlette import EventSourceResponse, ServerSentEvent

from api.error_handlers import SERVER_MESSAGE
from api.runtime.events import RunCompleted, RunError, RunEvent, RunFailed
from api.runtime.runner import PreparedTurn

HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def event_stream(prepared: PreparedTurn, *, ping_seconds: float) -> EventSourceResponse:
    return EventSourceResponse(relay(prepared), ping=ping_seconds, headers=HEADERS)


def encode(number: int, event: RunEvent) -> ServerSentEvent:
    return ServerSentEvent(
        data=json.dumps(event.data(), ensure_ascii=False), event=event.EVENT, id=str(number)
    )


async def relay(prepared: PreparedTurn) -> AsyncIterator[ServerSentEvent]:
    """The run's events as they come, numbered; a run that ends without saying how (the
    server shutting down mid-turn) ends the stream with an error."""
    queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async with contextlib.aclosing(prepared.stream()) as produced:
                async for event in produced:
                    queue.put_nowait(event)
        finally:
            queue.put_nowait(None)

    task = prepared.runtime.start(pump())
    number = 0
    last: RunEvent | None = None
    try:
        while (event := await queue.get()) is not None:
            number += 1
            last = event
            yield encode(number, event)
        if not isinstance(last, RunCompleted | RunFailed):  # the run broke off: say so
            run_id = prepared.turn.state.run_id
            yield encode(number + 1, RunError(run_id, "internal_error", SERVER_MESSAGE))
            yield encode(number + 2, RunFailed(run_id, "internal_error"))
    finally:
        task.cancel()  # done already, unless the client left mid-run
