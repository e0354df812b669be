"""How a turn answers: a Server-Sent Events stream, or one JSON document for clients that
ask for no stream (`"stream": false`, or an `Accept` naming JSON only)."""

from typing import Annotated, Any

from fastapi import Header
from fastapi.responses import JSONResponse, Response

from api.config import Settings
from api.http.sse import event_stream, run_headers
from api.idempotency.errors import KEY_PATTERN
from api.journal import events
from api.runtime.runner import PreparedTurn
from api.runtime.schemas import ToolUse, TurnOut, TurnUsage

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        description="Sent again with the same key, the request gets the same turn: its "
        "stored answer, or its stream while it runs (docs/idempotency.md). A streamed turn "
        "with a key goes on a while after its client leaves, for it to come back. 1 to 255 "
        'printable ASCII characters, quoted or not (`"abc"` is `abc`).',
        json_schema_extra={"pattern": KEY_PATTERN},
    ),
]


async def respond(
    prepared: PreparedTurn,
    *,
    stream: bool,
    accept: str | None,
    settings: Settings,
    resumable: bool = False,
) -> Response:
    """`resumable`: the client sent an Idempotency-Key, so it means to come back for the
    turn if its connection drops; the turn waits a while for it rather than stopping."""
    if wants_stream(stream, accept):
        grace = settings.run_resume_seconds if resumable else 0.0
        return event_stream(prepared, ping_seconds=settings.sse_ping_seconds, grace_seconds=grace)
    found = await answer(prepared)
    return JSONResponse(found.model_dump(mode="json"), headers=run_headers(prepared))


def wants_stream(asked: bool, accept: str | None) -> bool:
    """SSE unless the body says `stream: false` or the client accepts JSON only."""
    accepted = (accept or "").lower()
    if not asked:
        return False
    return "text/event-stream" in accepted or "application/json" not in accepted


async def answer(prepared: PreparedTurn) -> TurnOut:
    """The run to its end; a failure is the request's error (what was stored stays)."""
    found = await prepared.collect()
    if prepared.failure is not None:
        raise prepared.failure
    state = prepared.turn.state
    final = next((e for e in reversed(found) if isinstance(e, events.FinalMessage)), None)
    results = {e.call_id: e.content for e in found if isinstance(e, events.ToolAnswered)}
    completed = next(e for e in found if isinstance(e, events.RunCompleted))
    return TurnOut(
        output=final.content if final else "",
        run_id=state.run_id,
        agent_id=state.agent_id,
        conversation_id=state.conversation_id,
        session_id=state.session_id,
        actor_id=state.actor_id,
        message_id=final.message_id if final else None,
        steps=completed.steps,
        tool_calls=[
            ToolUse(
                call_id=e.call_id, name=e.name, arguments=e.arguments, result=results.get(e.call_id)
            )
            for e in found
            if isinstance(e, events.ToolCalled)
        ],
        memory_warnings=[e.block for e in found if isinstance(e, events.MemoryWarning)],
        usage=TurnUsage(
            input_tokens=completed.usage.input_tokens, output_tokens=completed.usage.output_tokens
        ),
        reason=prepared.turn.ended_by,
    )


TURN_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-Sent Events (docs/sse.md), or one JSON answer without a stream.",
        "content": {
            "text/event-stream": {"schema": {"type": "string"}},
            "application/json": {"schema": TurnOut.model_json_schema()},
        },
    }
}
