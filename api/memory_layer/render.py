"""Seed 004's prompt-ready text: each block as `<label description="…">value</label>`, then
`<relevant_memories>` numbered, sections apart by a blank line; and a token budget that
keeps blocks first, then memories by rank."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from api.conversations.messages.models import SAID_ROLES
from api.kit.text import xml_attribute
from api.memory import validity
from api.memory.archival import Match
from api.memory.service import BlockView

HUMAN = "human"
SUMMARY = "summary"
PERSONA = "persona"
# Seed 004's descriptions of the two blocks every subject has.
HUMAN_DESCRIPTION = "Information about the human user."
SUMMARY_DESCRIPTION = "A rolling summary of the conversation."
CHARS_PER_TOKEN = 4  # the estimate a token budget is counted in
SEPARATOR = "\n\n"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def value(block: BlockView) -> str:
    """The block's text: its lines joined by newlines (seed 002's `value` too)."""
    return "\n".join(block.lines)


def xml(block: BlockView) -> str:
    description = xml_attribute(block.description)
    return f'<{block.name} description="{description}">{value(block)}</{block.name}>'


def context_blocks(blocks: Sequence[BlockView], *, include_summary: bool) -> list[BlockView]:
    """What the context shows, in its order: `human`, the custom blocks (oldest first, as
    they were given), `summary` last. The `persona` every agent has shows once it holds
    something."""
    human = [b for b in blocks if b.name == HUMAN]
    persona = [b for b in blocks if b.name == PERSONA and b.lines]
    custom = sorted(
        (b for b in blocks if b.name not in (HUMAN, PERSONA, SUMMARY)),
        key=lambda b: (b.created_at or EPOCH, b.name),
    )
    summary = [b for b in blocks if b.name == SUMMARY] if include_summary else []
    return [*human, *persona, *custom, *summary]


def role_of(tags: Sequence[str]) -> str | None:
    return next((t for t in tags if t in SAID_ROLES), None)


def memory_text(match: Match) -> str:
    """A relevant memory as seed 004 shows it: `User: …` for what a person said, and
    ` (until 2025-06-01)` after one replaced since."""
    role = role_of(match.memory.tags)
    content = match.memory.content + validity.until(match.memory)
    return f"{role.title()}: {content}" if role else content


def result_text(match: Match) -> str:
    """A search result as seed 004 lists it: the memory's text, ` (until 2025-06-01)`
    after one replaced since."""
    return match.memory.content + validity.until(match.memory)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def memories_section(memories: Sequence[str]) -> str:
    numbered = "".join(f"{i}. {text}\n" for i, text in enumerate(memories, 1))
    return f"<relevant_memories>\n{numbered}</relevant_memories>"


@dataclass(frozen=True)
class Combined:
    text: str
    blocks: list[str]  # the block texts it kept
    memories: list[str]  # the memories it kept, best first
    truncated: bool


def combine(blocks: Sequence[str], memories: Sequence[str], budget: int | None) -> Combined:
    """The combined context; within `budget` tokens (estimated), blocks are kept first, in
    order, then memories by rank, each while it fits."""
    if budget is None:
        parts = [*blocks, memories_section(memories)] if memories else list(blocks)
        return Combined(SEPARATOR.join(parts), list(blocks), list(memories), False)
    kept_blocks: list[str] = []
    for text in blocks:
        if estimate_tokens(SEPARATOR.join([*kept_blocks, text])) <= budget:
            kept_blocks.append(text)
    kept_memories: list[str] = []
    for text in memories:
        trial = SEPARATOR.join([*kept_blocks, memories_section([*kept_memories, text])])
        if estimate_tokens(trial) <= budget:
            kept_memories.append(text)
    parts = [*kept_blocks, memories_section(kept_memories)] if kept_memories else kept_blocks
    truncated = len(kept_blocks) < len(blocks) or len(kept_memories) < len(memories)
    return Combined(SEPARATOR.join(parts), kept_blocks, kept_memories, truncated)
