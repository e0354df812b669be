"""The Server-Sent Events of a turn, as OpenAPI documents them: one component per event
(`run.started`, `text.delta`, ...), built from the same dataclasses the runtime sends
(api/runtime/events.py), so that docs/sse.md, the stream and the contract name the same
events with the same fields."""

from typing import Any

from pydantic import TypeAdapter

from api.http.contract.errors import Responses
from api.journal import events
from api.runtime.schemas import TurnOut

REF = "#/components/schemas/"
NESTED = "Run"  # the prefix of what event data refer to (RunUsage), apart from other models


def event_classes() -> list[type[events.RunEvent]]:
    """Every event a run can send, in the order they are declared."""
    found: list[type[events.RunEvent]] = []
    pending = list(events.RunEvent.__subclasses__())
    while pending:
        cls = pending.pop(0)
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def component_name(cls: type[events.RunEvent]) -> str:
    return f"{cls.__name__}Event"


def event_components() -> dict[str, dict[str, Any]]:
    """The data object of each event, by component name (with what they refer to)."""
    schemas: dict[str, dict[str, Any]] = {}
    for cls in event_classes():
        schema = TypeAdapter(cls).json_schema(ref_template=REF + NESTED + "{model}")
        for name, nested in schema.pop("$defs", {}).items():
            schemas[NESTED + name] = nested
        schema["title"] = component_name(cls)
        schema["description"] = f"The data of a `{cls.EVENT}` event (docs/sse.md)."
        schemas[component_name(cls)] = schema
    return schemas


def _item(cls: type[events.RunEvent]) -> dict[str, Any]:
    return {
        "type": "object",
        "title": cls.EVENT,
        "required": ["event", "data", "id"],
        "properties": {
            "event": {"const": cls.EVENT},
            "id": {"type": "string", "description": "Counts from 1 within the run."},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": REF + component_name(cls)},
            },
        },
    }


def run_events(description: str) -> Responses:
    """A 200 answering a run's events as `text/event-stream` (docs/sse.md)."""
    return {
        200: {
            "description": description,
            "content": {
                "text/event-stream": {"itemSchema": {"oneOf": [_item(c) for c in event_classes()]}}
            },
        }
    }


def turn() -> Responses:
    """A turn's 200: its events as they happen, or one JSON answer without a stream."""
    streamed = run_events(
        "Server-Sent Events of the turn (docs/sse.md), or one JSON answer when the body says "
        '`"stream": false` or `Accept` names JSON only.'
    )
    streamed[200]["model"] = TurnOut
    return streamed
