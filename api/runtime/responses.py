"""How a turn answers: a Server-Sent Events stream, or one JSON document for clients that
ask for no stream (`"stream": false`, or an `Accept` naming JSON only)."""

from typing import Any

from fastapi.responses import JSONResponse, Response

from api.runtime import events
from api.runtime.runner import PreparedTurn
from api.runtime.schemas import ToolUse, TurnOut, TurnUsage
from api.runtime.sse import event_stream


async def respond(
    prepared: PreparedTurn, *, stream: bool, accept: str | None, ping_seconds: float
) -> Response:
    if wants_stream(stream, accept):
        return event_stream(prepared, ping_seconds=ping_seconds)
    return JSONResponse((await answer(prepared)).model_dump(mode="json"))


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
