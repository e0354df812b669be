"""How a memory's validity reads, the same in every reply that shows it (tools, REST notes,
seed 002's and 004's surfaces, MCP): "(until 2025-06-01)" after a replaced memory, and one
line per replacement a write made or could not make."""

from api.memory.archival import ArchivalInsert
from api.memory.models import ArchivalMemory

QUOTED_CHARS = 80  # a memory quoted in a line, at most


def _day(memory: ArchivalMemory) -> str:
    return memory.valid_since.strftime("%Y-%m-%d")


def _quoted(text: str) -> str:
    one_line = " ".join(text.split())
    if len(one_line) > QUOTED_CHARS:
        one_line = one_line[: QUOTED_CHARS - 1].rstrip() + "…"
    return f"'{one_line}'"


def until(memory: ArchivalMemory) -> str:
    """ " (until 2025-06-01)" for a replaced memory; "" for a current one."""
    if memory.superseded_at is None:
        return ""
    return f" (until {memory.superseded_at.strftime('%Y-%m-%d')})"


def replacement_lines(result: ArchivalInsert) -> list[str]:
    """What a write replaced, and what it was asked to replace that another write had:
    "Replaced: 'Lives in: Lisbon' (2025-03-02) → 'Lives in: Porto'"."""
    new = _quoted(result.memory.content)
    lines = [f"Replaced: {_quoted(old.content)} ({_day(old)}) → {new}" for old in result.replaced]
    lines += [
        f"Not replaced: {_quoted(old.content)} was already replaced by {old.superseded_by}"
        f"{until(old)}"
        for old in result.not_replaced
    ]
    if result.memory.superseded_by is not None:
        lines.append(
            f"Stored as history: {new} held before the current memory "
            f"{result.memory.superseded_by}{until(result.memory)}"
        )
    return lines
