"""Capacity over turns: a block at or above 80% counts a warned turn at the end of every turn;
after 3 warned turns the warning was ignored and the block is compacted.

Compaction never loses a line: every line the rewrite leaves out is written to archival
memory first, and only then is the shorter block saved (guarded by its version). A crash in
between leaves the lines in both places, never in neither; a retry finds them already
archived, as inserts are idempotent.
"""

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from api.kit.retry import MAX_ATTEMPTS, backoff
from api.llm.errors import ProviderError
from api.memory import archival, blocks, service
from api.memory.errors import MemoryBusy
from api.memory.models import CoreMemory
from api.memory.summarizer import Summarizer, TruncatingSummarizer
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.table import ConditionFailed

log = logging.getLogger(__name__)

COMPACT_AFTER_TURNS = 3
_FALLBACK = TruncatingSummarizer()


@dataclass(frozen=True)
class Compaction:
    block: str
    archived: tuple[str, ...]  # the lines taken out, now in archival memory
    words_before: int
    words_after: int


@dataclass(frozen=True)
class TurnReport:
    """Blocks still warned (block -> warned turns so far, and the block itself) and the
    blocks compacted."""

    warnings: dict[str, int] = field(default_factory=dict)
    compactions: list[Compaction] = field(default_factory=list)
    warned: dict[str, service.BlockView] = field(default_factory=dict)  # as they are now


ARCHIVE_BATCH = 10


def archived_line(block: str, line: str) -> str:
    """A line as archival memory keeps it: the block it came from stays searchable."""
    return f"[{block}] {line}"


async def note_turn(
    repos: Repositories,
    search: SearchEngine,
    agent_id: str,
    summarizer: Summarizer,
    *,
    as_read: tuple[Sequence[service.BlockView], Mapping[str, int]] | None = None,
) -> TurnReport:
    """Call once at the end of every turn of the agent. Counts a warned turn for each block
    at or above 80%, clears the count of blocks below it, and compacts the blocks whose
    warning has now been ignored for COMPACT_AFTER_TURNS turns. `as_read`: the blocks and
    their warned turns as the turn read them at its start, when it cannot have changed them
    since (no tool of the turn wrote core memory): the prompt showed them, so they are what
    the count is about, and nothing is read; both are read again (one query) otherwise. A
    compaction reads its block afresh either way."""
    views: Sequence[service.BlockView]
    counted: Mapping[str, int]
    if as_read is None:
        views, counted = await service.blocks_and_warnings(repos, agent_id)
    else:
        views, counted = as_read
    relieved = [b.name for b in views if not b.needs_warning and b.name in counted]
    full = [b for b in views if b.needs_warning]
    _, turns_of = await asyncio.gather(
        asyncio.gather(*(repos.memory.reset_warning(agent_id, b) for b in relieved)),
        asyncio.gather(*(repos.memory.add_warning_turn(agent_id, b.name) for b in full)),
    )
    warnings: dict[str, int] = {}
    warned: dict[str, service.BlockView] = {}
    compactions: list[Compaction] = []
    for block, turns in zip(full, turns_of, strict=True):
        if turns < COMPACT_AFTER_TURNS:
            warnings[block.name] = turns
            warned[block.name] = block
        elif turns == COMPACT_AFTER_TURNS:
            # Only the turn that reaches the count compacts: a concurrent turn that counts
            # past it finds the work claimed (and the count reset once it is done).
            compactions.append(await compact_block(repos, search, agent_id, block.name, summarizer))
    return TurnReport(warnings, compactions, warned)


async def _shorter(
    summarizer: Summarizer, block: str, lines: list[str], word_limit: int
) -> list[str]:
    """The summarizer's rewrite if it really relieves the block; the deterministic rule if
    the model failed or gave back something still at the warning level."""
    try:
        rewritten = await summarizer.summarize(block, lines, word_limit)
    except ProviderError as e:
        log.warning("Summarizing [%s] failed (%s); keeping the newest lines instead.", block, e)
    else:
        candidate = list(dict.fromkeys(c for c in map(blocks.clean_line, rewritten) if c))
        words = blocks.count_words(candidate)
        if not blocks.needs_warning(words, word_limit) and words < blocks.count_words(lines):
            return candidate
    return await _FALLBACK.summarize(block, lines, word_limit)


async def compact_block(
    repos: Repositories, search: SearchEngine, agent_id: str, block: str, summarizer: Summarizer
) -> Compaction:
    for attempt in range(MAX_ATTEMPTS):
        definition, core = await repos.memory.get_block(agent_id, block)
        if definition is None or core is None:  # deleted meanwhile: nothing left to do
            return Compaction(block, (), 0, 0)
        lines = list(core.lines)
        if not blocks.needs_warning(blocks.count_words(lines), definition.word_limit):
            # Relieved meanwhile (by the model, or a concurrent compaction): nothing to do.
            await repos.memory.reset_warning(agent_id, block)
            return Compaction(block, (), blocks.count_words(lines), blocks.count_words(lines))
        shorter = await _shorter(summarizer, block, lines, definition.word_limit)
        kept = set(shorter)
        removed = tuple(line for line in lines if line not in kept)
        # Archived first, so that nothing is ever only in the block being rewritten; a few
        # at a time, as a full block holds hundreds of lines.
        for start in range(0, len(removed), ARCHIVE_BATCH):
            await asyncio.gather(
                *(
                    archival.insert(repos, search, agent_id, archived_line(block, x))
                    for x in removed[start : start + ARCHIVE_BATCH]
                )
            )
        now = datetime.fromtimestamp(search.clock.now(), tz=UTC)
        updated = CoreMemory(
            agent_id=agent_id,
            block_name=block,
            lines=shorter,
            word_count=blocks.count_words(shorter),
            version=core.version + 1,
            updated_at=now,
        )
        change = service.rewrite_change(definition, updated, lines, at=now, source="compaction")
        try:
            await repos.memory.save_core(updated, previous_version=core.version, change=change)
        except ConditionFailed:
            # Someone edited the block meanwhile: summarize what is there now. What was
            # archived stays archived; inserting it again is a no-op.
            await backoff(attempt)
            continue
        await repos.memory.reset_warning(agent_id, block)
        log.info("Compacted [%s] of agent %s: %d lines archived.", block, agent_id, len(removed))
        return Compaction(block, removed, blocks.count_words(lines), updated.word_count)
    raise MemoryBusy(f"[{block}] is being edited by too many writers to compact; try again.")
