"""Core memory: an agent's blocks of numbered lines, for REST routes and the memory tools.

Every function takes an `agent_id` the caller already owns, and a block name as typed:
names are normalized here, once for every caller. Every write of a block's lines is a
read-modify-write guarded by its `version`; a write that lost the race reads again and
retries, so concurrent edits all land and none overwrites another.

Every new version of a block's lines is written with its `CoreMemoryChange` (what changed,
when, by which `source`), in the same transaction: the block's line history. Writers say
who they are; a caller that does not is taken for a person over REST.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from api.kit.clock import Clock, SystemClock
from api.kit.retry import MAX_ATTEMPTS, backoff
from api.memory import blocks, repository
from api.memory.errors import (
    BlockExists,
    BlockFull,
    BlockNotFound,
    BlockTooLarge,
    ContentTooLong,
    DefaultBlockProtected,
    DuplicateLine,
    EmptyContent,
    HistoryIncomplete,
    InvalidBlockName,
    InvalidCharLimit,
    InvalidWordLimit,
    LineOutOfRange,
    MemoryBusy,
    VersionMismatch,
    VersionNotFound,
)
from api.memory.models import (
    DEFAULT_WORD_LIMIT,
    ChangeSource,
    CoreMemory,
    CoreMemoryChange,
    LineAction,
    MemoryBlockDef,
)
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.table import ConditionFailed, TransactionCancelled

MAX_DESCRIPTION_CHARS = 500
HISTORY_RECORD_CHARS = 90_000  # the lines one history record may carry in all
# Blocks keep when they were created and last written. Callers that hold the app's clock
# pass it; the others (the same time in production) use the system's.
SYSTEM_CLOCK: Clock = SystemClock()


def _at(clock: Clock) -> datetime:
    return datetime.fromtimestamp(clock.now(), tz=UTC)


@dataclass(frozen=True)
class BlockView:
    """A block as people and models see it: definition, lines and capacity."""

    name: str
    description: str
    word_limit: int
    is_default: bool
    lines: tuple[str, ...]
    version: int
    created_at: datetime | None = None  # None: written before blocks kept their times
    updated_at: datetime | None = None
    char_limit: int | None = None  # seed 004's blocks also have a limit in characters

    @property
    def word_count(self) -> int:
        return blocks.count_words(self.lines)

    @property
    def char_count(self) -> int:
        return blocks.count_chars(self.lines)

    @property
    def chars_bind(self) -> bool:
        """Whether the character limit is the fuller of the two limits."""
        return blocks.char_percent_used(self.char_count, self.char_limit) > blocks.percent_used(
            self.word_count, self.word_limit
        )

    @property
    def percent_used(self) -> int:
        return max(
            blocks.percent_used(self.word_count, self.word_limit),
            blocks.char_percent_used(self.char_count, self.char_limit),
        )

    @property
    def needs_warning(self) -> bool:
        return blocks.needs_warning(self.word_count, self.word_limit) or (
            blocks.needs_char_warning(self.char_count, self.char_limit)
        )


@dataclass(frozen=True)
class LineChange:
    """What an edit did: the block after it, the line it concerns (as stored, or as it was
    for a delete), the line it replaced, and whether anything changed at all."""

    block: BlockView
    line_number: int
    line: str
    previous: str | None = None
    changed: bool = True


def view(definition: MemoryBlockDef, core: CoreMemory | None) -> BlockView:
    return BlockView(
        name=definition.block_name,
        description=definition.description,
        word_limit=definition.word_limit,
        is_default=definition.is_default,
        lines=tuple(core.lines) if core else (),
        version=core.version if core else 0,
        created_at=definition.created_at,
        updated_at=core.updated_at if core and core.updated_at else definition.created_at,
        char_limit=definition.char_limit,
    )


def block_name(name: str) -> str:
    """The normalized name, or InvalidBlockName."""
    normalized = blocks.normalize_block_name(name)
    if not blocks.is_valid_block_name(normalized):
        raise InvalidBlockName(name)
    return normalized


def _ordered(views: list[BlockView]) -> list[BlockView]:
    """Default blocks first, in their fixed order, then custom blocks by name."""
    rank = {b.name: i for i, b in enumerate(blocks.DEFAULT_BLOCKS)}
    return sorted(views, key=lambda v: (rank.get(v.name, len(rank)), v.name))


async def _load(
    repos: Repositories, agent_id: str, block: str
) -> tuple[MemoryBlockDef, CoreMemory | None]:
    definition, core = await repos.memory.get_block(agent_id, block)
    if definition is None:
        names = [v.name for v in await list_blocks(repos, agent_id)]
        raise BlockNotFound(block, names)
    return definition, core


# --- reading ---------------------------------------------------------------------------


async def list_blocks(repos: Repositories, agent_id: str) -> list[BlockView]:
    return _ordered([view(d, c) for d, c in await repos.memory.list_blocks(agent_id)])


async def blocks_and_warnings(
    repos: Repositories, agent_id: str
) -> tuple[list[BlockView], dict[str, int]]:
    """The blocks, and warned turns per block (blocks without a warning left out): one read."""
    found, warnings = await repos.memory.blocks_and_warnings(agent_id)
    return _ordered([view(d, c) for d, c in found]), warnings


async def read_block(repos: Repositories, agent_id: str, block: str) -> BlockView:
    return view(*await _load(repos, agent_id, block_name(block)))


async def block_history(
    repos: Repositories, agent_id: str, block: str, *, limit: int, cursor: str | None = None
) -> tuple[list[CoreMemoryChange], str | None]:
    """A page of the block's line history, newest first, and the cursor of the next page
    (None: no more). BlockNotFound for a block that does not exist (any more)."""
    name = block_name(block)
    definition, _ = await _load(repos, agent_id, name)
    return await repos.memory.changes_page(
        agent_id, name, definition.created_at, limit=limit, cursor=cursor
    )


# --- block definitions -----------------------------------------------------------------


def _description(text: str) -> str:
    description = blocks.clean_line(text)
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise ContentTooLong(
            f"A block description has at most {MAX_DESCRIPTION_CHARS} characters, "
            f"not {len(description)}."
        )
    return description


def _word_limit(word_limit: int) -> int:
    if not 1 <= word_limit <= blocks.MAX_WORD_LIMIT:
        raise InvalidWordLimit(word_limit, blocks.MAX_WORD_LIMIT)
    return word_limit


def _char_limit(char_limit: int | None) -> int | None:
    if char_limit is not None and not 1 <= char_limit <= blocks.MAX_BLOCK_CHARS:
        raise InvalidCharLimit(char_limit, blocks.MAX_BLOCK_CHARS)
    return char_limit


def _initial_lines(
    block: str, text: str, word_limit: int, char_limit: int | None = None
) -> list[str]:
    given = [line for line in text.splitlines() if blocks.clean_line(line)]
    lines = list(dict.fromkeys(_line(block, line, empty="") for line in given))
    _check_fits(block, word_limit, [], lines, action="fill", char_limit=char_limit)
    return lines


async def ensure_default_blocks(
    repos: Repositories, agent_id: str, *, persona: str = "", clock: Clock = SYSTEM_CLOCK
) -> None:
    """Create `human` and `persona` where missing; `persona` starts with the agent's persona
    text, one line per line. Safe to call again and concurrently."""
    now = _at(clock)
    for default in blocks.DEFAULT_BLOCKS:
        text = persona if default.name == "persona" else ""
        lines = _initial_lines(default.name, text, DEFAULT_WORD_LIMIT)
        await repos.memory.create_block(
            MemoryBlockDef(
                agent_id=agent_id,
                block_name=default.name,
                description=default.description,
                is_default=True,
                created_at=now,
            ),
            CoreMemory(
                agent_id=agent_id,
                block_name=default.name,
                lines=lines,
                word_count=blocks.count_words(lines),
                version=1,
                updated_at=now,
            ),
        )


async def create_block(
    repos: Repositories,
    agent_id: str,
    name: str,
    *,
    description: str = "",
    word_limit: int = DEFAULT_WORD_LIMIT,
    content: str = "",
    char_limit: int | None = None,
    is_default: bool = False,
    clock: Clock = SYSTEM_CLOCK,
) -> BlockView:
    """A block (custom unless `is_default`); BlockExists when its normalized name is
    taken. `char_limit` (seed 004's) bounds its characters as `word_limit` its words."""
    block = block_name(name)
    now = _at(clock)
    definition = MemoryBlockDef(
        agent_id=agent_id,
        block_name=block,
        description=_description(description),
        word_limit=_word_limit(word_limit),
        char_limit=_char_limit(char_limit),
        is_default=is_default,
        created_at=now,
    )
    lines = _initial_lines(block, content, definition.word_limit, definition.char_limit)
    core = CoreMemory(
        agent_id=agent_id,
        block_name=block,
        lines=lines,
        word_count=blocks.count_words(lines),
        version=1,
        updated_at=now,
    )
    if not await repos.memory.create_block(definition, core):
        raise BlockExists(block)
    return view(definition, core)


async def update_block(
    repos: Repositories,
    agent_id: str,
    block: str,
    *,
    description: str | None = None,
    word_limit: int | None = None,
    lines: Sequence[str] | None = None,
    expected: int | None = None,
    clock: Clock = SYSTEM_CLOCK,
    source: ChangeSource = "rest",
) -> BlockView:
    """A new description, word limit or set of lines (cleaned, empty and repeated lines
    dropped), all in one write that moves the block's version on. With `expected`, only if
    the block is still at that version (VersionMismatch otherwise); without, a concurrent
    write is read again and the change made on it. Lowering the limit below the content is
    allowed: the capacity warning and compaction then bring the block back under it."""
    name = block_name(block)
    changes: dict[str, object] = {}
    if description is not None:
        changes["description"] = _description(description)
    if word_limit is not None:
        changes["word_limit"] = _word_limit(word_limit)
    wanted = None if lines is None else _wanted_lines(name, lines)

    def plan(definition: MemoryBlockDef, current: list[str]) -> _Plan:
        if wanted is None or wanted == current:
            return _Plan(None, 0, "")
        # With a new limit, it must hold the new lines whatever was there before (a lower
        # limit alone is allowed); a block's character limits hold either way.
        _check_fits(
            name,
            definition.word_limit,
            [] if word_limit is not None else current,
            wanted,
            action="fill" if word_limit is not None else "rewrite",
            char_limit=definition.char_limit,
        )
        return _Plan(wanted, 0, "")

    edited = await _edit(repos, agent_id, name, plan, expected, changes, clock=clock, source=source)
    return edited.block


async def delete_block(
    repos: Repositories, agent_id: str, block: str, *, expected: int | None = None
) -> None:
    """A custom block, its lines and its line history: a block made again under the name
    starts from nothing, and the history of what was deleted is not kept (deleting the
    agent removes every block's)."""
    name = block_name(block)
    definition, core = await _load(repos, agent_id, name)
    if definition.is_default:
        raise DefaultBlockProtected(name)
    version = core.version if core else 0
    if expected is not None and version != expected:
        raise VersionMismatch(name, version)
    try:
        await repos.memory.delete_block(
            agent_id,
            name,
            version=None if expected is None else version,
            created_at=definition.created_at,
        )
    except TransactionCancelled as e:
        if not e.refused(repository.LINES):
            raise
        current = await read_block(repos, agent_id, name)  # BlockNotFound once it is gone
        raise VersionMismatch(name, current.version) from None


async def delete_all(repos: Repositories, search: SearchEngine, agent_id: str) -> int:
    """Every block, line, warning, archival memory and searchable message of a deleted
    agent; how many items."""
    return await repos.memory.delete_all(search, agent_id)


# --- lines -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    lines: list[str] | None  # None: nothing to write
    line_number: int
    line: str
    previous: str | None = None
    action: LineAction = "rewrite"
    restored_from: int | None = None


def _change(
    definition: MemoryBlockDef,
    core: CoreMemory,
    step: _Plan,
    before: Sequence[str],
    *,
    at: datetime,
    source: ChangeSource,
    run_id: str | None = None,
) -> CoreMemoryChange:
    """What made `core`'s version, from the plan that made it."""
    if step.action == "rewrite":
        return rewrite_change(
            definition,
            core,
            before,
            at=at,
            source=source,
            run_id=run_id,
            restored_from=step.restored_from,
        )
    old_line = {"replace": step.previous, "delete": step.line}.get(step.action)
    return CoreMemoryChange(
        agent_id=core.agent_id,
        block_name=core.block_name,
        block_created_at=definition.created_at,
        version=core.version,
        at=at,
        source=source,
        action=step.action,
        line_number=step.line_number,
        old_line=old_line,
        new_line=None if step.action == "delete" else step.line,
        run_id=run_id,
    )


def rewrite_change(
    definition: MemoryBlockDef,
    core: CoreMemory,
    before: Sequence[str],
    *,
    at: datetime,
    source: ChangeSource,
    run_id: str | None = None,
    restored_from: int | None = None,
) -> CoreMemoryChange:
    """A whole new set of lines (`core`'s) where there were `before`: the lines it removed
    and those it added, each in its block's order, and `before` whole (which a restore
    needs to undo it)."""
    after, earlier = set(core.lines), set(before)
    removed = [line for line in before if line not in after]
    added = [line for line in core.lines if line not in earlier]
    # The earlier lines make the record up to three blocks long: kept only while the item
    # stays well inside DynamoDB's 400 KB at four bytes a character; a restore refuses to
    # go back across a rewrite that could not keep them, as across an old one.
    kept = blocks.count_chars([*removed, *added, *before]) <= HISTORY_RECORD_CHARS
    return CoreMemoryChange(
        agent_id=core.agent_id,
        block_name=core.block_name,
        block_created_at=definition.created_at,
        version=core.version,
        at=at,
        source=source,
        action="rewrite",
        removed=removed,
        added=added,
        previous_lines=list(before) if kept else None,
        run_id=run_id,
        restored_from=restored_from,
    )


def _line(block: str, text: str, *, empty: str) -> str:
    line = blocks.clean_line(text)
    if not line:
        raise EmptyContent(empty)
    if len(line) > blocks.MAX_LINE_CHARS:
        raise ContentTooLong(
            f"Line is too long for [{block}] ({len(line)} characters; at most "
            f"{blocks.MAX_LINE_CHARS}). Store long details in archival memory instead "
            "(no change)."
        )
    return line


def _check_line_number(block: str, line_number: int, lines: Sequence[str]) -> None:
    if not 1 <= line_number <= len(lines):
        raise LineOutOfRange(block, line_number, len(lines))


def _check_fits(
    block: str,
    word_limit: int,
    before: Sequence[str],
    after: Sequence[str],
    *,
    action: str,
    char_limit: int | None = None,
) -> None:
    """Refuse an edit that leaves the block over its limit and larger than it was, so a block
    over a lowered limit can still shrink line by line. A block with a character limit
    (seed 004's `char_limit`) is held to it the same way."""
    words = blocks.count_words(after)
    if words > word_limit and words > blocks.count_words(before):
        raise BlockFull(block, words, word_limit, action=action)
    chars = blocks.count_chars(after)
    limit = min(char_limit or blocks.MAX_BLOCK_CHARS, blocks.MAX_BLOCK_CHARS)
    if chars > limit and chars > blocks.count_chars(before):
        raise BlockTooLarge(block, chars, limit, action=action)


async def _edit(
    repos: Repositories,
    agent_id: str,
    block: str,
    plan: Callable[[MemoryBlockDef, list[str]], _Plan],
    expected: int | None = None,
    changes: dict[str, object] | None = None,
    *,
    clock: Clock = SYSTEM_CLOCK,
    source: ChangeSource,
    run_id: str | None = None,
) -> LineChange:
    """Read, plan, write if the version is unchanged; otherwise start over from a fresh read
    (or, with `expected`, refuse once the version is another). `plan` sees the definition
    with `changes` made and the current lines each time, so its decision (duplicate? in
    range? fits?) is always about what is actually stored. Definition changes and lines
    are written together, and either moves the version on."""
    for attempt in range(MAX_ATTEMPTS):
        definition, core = await _load(repos, agent_id, block)
        version = core.version if core else 0
        if expected is not None and version != expected:
            raise VersionMismatch(block, version)
        updated = definition.model_copy(update=changes) if changes else definition
        current = list(core.lines) if core else []
        step = plan(updated, current)
        if step.lines is None and updated == definition:
            return LineChange(
                view(definition, core), step.line_number, step.line, step.previous, changed=False
            )
        lines = current if step.lines is None else step.lines
        now = _at(clock)
        new_core = CoreMemory(
            agent_id=agent_id,
            block_name=block,
            lines=lines,
            word_count=blocks.count_words(lines),
            version=version + 1,
            updated_at=now,
        )
        previous = core.version if core else None
        change = (
            None
            if step.lines is None
            else _change(updated, new_core, step, current, at=now, source=source, run_id=run_id)
        )
        try:
            if updated == definition and change is not None:
                await repos.memory.save_core(new_core, previous_version=previous, change=change)
            else:
                await repos.memory.save_block(
                    updated, new_core, previous_version=previous, change=change
                )
        except ConditionFailed:
            await backoff(attempt)
            continue
        except TransactionCancelled as e:
            if e.refused(repository.DEFINITION):  # the block was deleted meanwhile
                names = [v.name for v in await list_blocks(repos, agent_id)]
                raise BlockNotFound(block, names) from None
            await backoff(attempt)
            continue
        return LineChange(view(updated, new_core), step.line_number, step.line, step.previous)
    raise MemoryBusy(f"[{block}] is being edited by too many writers at once; try again.")


async def append_line(
    repos: Repositories,
    agent_id: str,
    block: str,
    content: str,
    *,
    expected: int | None = None,
    clock: Clock = SYSTEM_CLOCK,
    source: ChangeSource = "rest",
    run_id: str | None = None,
) -> LineChange:
    """Add a line at the end; a line already present is not added again (changed=False,
    line_number tells where it is)."""
    name = block_name(block)
    line = _line(name, content, empty=f"Cannot append an empty line to [{name}] (no change).")

    def plan(definition: MemoryBlockDef, lines: list[str]) -> _Plan:
        if line in lines:
            return _Plan(None, lines.index(line) + 1, line)
        after = [*lines, line]
        _check_fits(
            name,
            definition.word_limit,
            lines,
            after,
            action="append to",
            char_limit=definition.char_limit,
        )
        return _Plan(after, len(after), line, action="append")

    return await _edit(
        repos, agent_id, name, plan, expected, clock=clock, source=source, run_id=run_id
    )


async def replace_line(
    repos: Repositories,
    agent_id: str,
    block: str,
    line_number: int,
    new_content: str,
    *,
    expected: int | None = None,
    clock: Clock = SYSTEM_CLOCK,
    source: ChangeSource = "rest",
    run_id: str | None = None,
) -> LineChange:
    name = block_name(block)
    line = _line(
        name,
        new_content,
        empty=f"Cannot replace line {line_number} of [{name}] with empty content; "
        "delete the line instead (no change).",
    )

    def plan(definition: MemoryBlockDef, lines: list[str]) -> _Plan:
        _check_line_number(name, line_number, lines)
        previous = lines[line_number - 1]
        if previous == line:
            return _Plan(None, line_number, line, previous)
        if line in lines:
            raise DuplicateLine(name, lines.index(line) + 1, line)
        after = [*lines[: line_number - 1], line, *lines[line_number:]]
        _check_fits(
            name,
            definition.word_limit,
            lines,
            after,
            action=f"replace line {line_number} of",
            char_limit=definition.char_limit,
        )
        return _Plan(after, line_number, line, previous, action="replace")

    return await _edit(
        repos, agent_id, name, plan, expected, clock=clock, source=source, run_id=run_id
    )


async def delete_line(
    repos: Repositories,
    agent_id: str,
    block: str,
    line_number: int,
    *,
    expected: int | None = None,
    clock: Clock = SYSTEM_CLOCK,
    source: ChangeSource = "rest",
    run_id: str | None = None,
) -> LineChange:
    """Remove a line; the lines below it move up by one. `line` is the removed line."""
    name = block_name(block)

    def plan(definition: MemoryBlockDef, lines: list[str]) -> _Plan:
        _check_line_number(name, line_number, lines)
        removed = lines[line_number - 1]
        after = [*lines[: line_number - 1], *lines[line_number:]]
        return _Plan(after, line_number, removed, action="delete")

    return await _edit(
        repos, agent_id, name, plan, expected, clock=clock, source=source, run_id=run_id
    )


def _wanted_lines(block: str, lines: Sequence[str]) -> list[str]:
    wanted = list(dict.fromkeys(line for line in map(blocks.clean_line, lines) if line))
    for line in wanted:
        _line(block, line, empty="")
    return wanted


async def check_lines(repos: Repositories, agent_id: str, block: str, lines: Sequence[str]) -> None:
    """Refuse, without writing, lines `write_lines` would refuse on the block as stored now:
    for a caller that must save something else first and write the lines after."""
    name = block_name(block)
    wanted = _wanted_lines(name, lines)
    definition, core = await _load(repos, agent_id, name)
    current = list(core.lines) if core else []
    if wanted != current:
        _check_fits(
            name,
            definition.word_limit,
            current,
            wanted,
            action="rewrite",
            char_limit=definition.char_limit,
        )


async def write_lines(
    repos: Repositories,
    agent_id: str,
    block: str,
    lines: Sequence[str],
    *,
    expected: int | None = None,
    clock: Clock = SYSTEM_CLOCK,
    source: ChangeSource = "rest",
) -> BlockView:
    """Replace a block's whole content (a person editing it): lines cleaned, empty and
    repeated lines dropped. Written on the version read (a concurrent write makes it read
    again); with `expected`, only on that version."""
    return await update_block(
        repos, agent_id, block, lines=lines, expected=expected, clock=clock, source=source
    )


# --- history: restoring a version ------------------------------------------------------


def _undo(block: str, lines: list[str], change: CoreMemoryChange) -> list[str]:
    """The lines before `change`, from the lines right after it; HistoryIncomplete when the
    record cannot be undone exactly (a rewrite recorded before rewrites kept their earlier
    lines) or does not fit the lines (which a complete history never does)."""
    at = (change.line_number or 0) - 1
    if change.action == "rewrite":
        if change.previous_lines is None:
            raise HistoryIncomplete(
                block,
                change.version - 1,
                f"version {change.version} rewrote the block before its history kept the "
                "lines a rewrite replaced",
            )
        return list(change.previous_lines)
    if change.action == "delete" and 0 <= at <= len(lines) and change.old_line is not None:
        return [*lines[:at], change.old_line, *lines[at:]]
    if 0 <= at < len(lines) and lines[at] == change.new_line:
        if change.action == "append":
            return [*lines[:at], *lines[at + 1 :]]
        if change.action == "replace" and change.old_line is not None:
            return [*lines[:at], change.old_line, *lines[at + 1 :]]
    raise HistoryIncomplete(
        block, change.version - 1, f"its history does not match version {change.version}"
    )


async def lines_at(
    repos: Repositories,
    definition: MemoryBlockDef,
    core: CoreMemory | None,
    version: int,
) -> list[str]:
    """The block's lines as they were at `version`: its lines now with every later change
    undone, newest first. A version that only changed the block's definition has no record
    and changed no line. Versions older than the first record the history holds are refused:
    a block older than its history may have changed lines then that nothing recorded."""
    name = definition.block_name
    current = core.version if core else 0
    if not 1 <= version <= current:
        raise VersionNotFound(name, version, current)
    lines = list(core.lines) if core else []
    if version == current:
        return lines
    agent_id, created_at = definition.agent_id, definition.created_at
    oldest = await repos.memory.oldest_change(agent_id, name, created_at)
    if oldest is None or oldest.version > version + 1:
        first = "none" if oldest is None else f"version {oldest.version}"
        raise HistoryIncomplete(
            name, version, f"the block's history begins after it (its first record: {first})"
        )
    later = await repos.memory.changes_from(agent_id, name, created_at, version=version + 1)
    for change in reversed(later):
        lines = _undo(name, lines, change)
    return lines


def _restoring(
    name: str, version: int, wanted: list[str]
) -> Callable[[MemoryBlockDef, list[str]], _Plan]:
    def plan(definition: MemoryBlockDef, current: list[str]) -> _Plan:
        if wanted == current:
            return _Plan(None, 0, "")
        _check_fits(
            name,
            definition.word_limit,
            current,
            wanted,
            action=f"restore version {version} of",
            char_limit=definition.char_limit,
        )
        return _Plan(wanted, 0, "", restored_from=version)

    return plan


async def restore_version(
    repos: Repositories,
    agent_id: str,
    block: str,
    version: int,
    *,
    expected: int | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> BlockView:
    """A new version of the block whose lines are those of `version` (its definition stays
    as it is now), recorded in the history as a rewrite that says which version it brought
    back. Refused as any rewrite is when the lines would not fit the block's limits now;
    with `expected`, only on that version (VersionMismatch). The same lines as now change
    nothing."""
    name = block_name(block)
    for attempt in range(MAX_ATTEMPTS):
        definition, core = await _load(repos, agent_id, name)
        read = core.version if core else 0
        if expected is not None and read != expected:
            raise VersionMismatch(name, read)
        wanted = await lines_at(repos, definition, core, version)

        try:
            # On the version the lines were rebuilt from: a write meanwhile rebuilds them.
            plan = _restoring(name, version, wanted)
            edited = await _edit(repos, agent_id, name, plan, read, clock=clock, source="rest")
        except VersionMismatch:
            if expected is not None:
                raise
            await backoff(attempt)
            continue
        return edited.block
    raise MemoryBusy(f"[{name}] is being edited by too many writers at once; try again.")
