from datetime import UTC, datetime
from typing import Any

from api.kit.clock import FrozenClock
from api.tools.native import NATIVE_TOOLS, ToolContext


async def call(ctx: ToolContext, tool: str, **arguments: Any) -> str:
    """What the model reads back after calling `tool` with `arguments`."""
    return await NATIVE_TOOLS[tool].execute(ctx, arguments)


def at(clock: FrozenClock, day: str) -> None:
    """Move the clock to noon (UTC) of an ISO date."""
    clock.set(datetime.fromisoformat(f"{day}T12:00:00+00:00").astimezone(UTC).timestamp())
