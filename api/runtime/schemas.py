"""A turn's answer as one JSON document, for clients that ask for no stream."""

from typing import Any

from pydantic import BaseModel

from api.runtime import events
from api.runtime.runner import PreparedTurn


class ToolUse(BaseModel):
    call_id: str
    name: str
    arguments: dict[str, Any]
    result: str | None


class TurnUsage(BaseModel):
    input_tokens: int
    output_tokens: int


class TurnOut(BaseModel):
    output: str
    run_id: str
    agent_id: str
    conversation_id: str
    session_id: str
    actor_id: str
    message_id: str | None
    steps: int
    tool_calls: list[ToolUse]
    memory_warnings: list[str]
    usage: TurnUsage


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
