"""History and undo in the memory domain, on every engine: a block's version rebuilt from
its line history and restored as a new version; an archival memory deleted, kept for its
undo window, restored exactly or gone for good once the window (the table's TTL) passes."""

import pytest

from api.kit.clock import FrozenClock
from api.memory import archival
from api.memory import service as memory_service
from api.memory.errors import (
    BlockFull,
    HistoryIncomplete,
    RestoreConflict,
    RestoreWindowPassed,
    VersionMismatch,
    VersionNotFound,
)
from api.memory.summarizer import TruncatingSummarizer
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store import keys
from api.store.table import Table
from api.tools.native import ToolContext
from tests.memory.helpers import call

AGENT = "agent-1"


async def test_every_version_of_a_block_is_rebuilt_and_restored_as_a_new_version(
    table: Table, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    search = SearchEngine(repos.search, None, clock)
    await memory_service.ensure_default_blocks(repos, AGENT)
    chat = ToolContext(repos, search, AGENT, TruncatingSummarizer(), run_id="run-7")
    seen: dict[int, list[str]] = {1: []}

    async def note() -> None:
        block = await memory_service.read_block(repos, AGENT, "human")
        seen[block.version] = list(block.lines)

    await call(chat, "core_memory_append", block="human", content="Name: Alice")
    await note()
    await call(chat, "core_memory_append", block="human", content="Likes: tea")
    await note()
    await call(chat, "core_memory_append", block="human", content="Lives in: Porto")
    await note()
    await call(chat, "core_memory_replace", block="human", line_number=1, new_content="Name: Bob")
    await note()
    await memory_service.delete_line(repos, AGENT, "human", 2)
    await note()
    # A rewrite that reorders lines: removed/added alone could not tell the order back.
    await memory_service.write_lines(repos, AGENT, "human", ["Lives in: Porto", "Name: Bob", "X"])
    await note()
    await memory_service.update_block(repos, AGENT, "human", description="About the user")
    await note()  # a version that changed only the definition: no record, no line changed

    for version, lines in sorted(seen.items()):
        before = await memory_service.read_block(repos, AGENT, "human")
        restored = await memory_service.restore_version(
            repos, AGENT, "human", version, expected=before.version
        )
        assert list(restored.lines) == lines, version
        assert restored.description == "About the user"  # the definition stays
        if lines != list(before.lines):
            assert restored.version == before.version + 1
            changes, _ = await memory_service.block_history(repos, AGENT, "human", limit=1)
            assert (changes[0].source, changes[0].restored_from) == ("rest", version)
            assert changes[0].previous_lines == list(before.lines)
        else:  # the same lines as now: nothing written
            assert restored.version == before.version

    changes, _ = await memory_service.block_history(repos, AGENT, "human", limit=100)
    by_version = {c.version: c for c in changes}
    assert by_version[2].run_id == "run-7"  # the tool's turn
    assert by_version[6].run_id is None  # a REST edit


async def test_a_restore_is_refused_clearly(table: Table, clock: FrozenClock) -> None:
    repos = Repositories.over(table)
    await memory_service.ensure_default_blocks(repos, AGENT)
    await memory_service.create_block(repos, AGENT, "notes", word_limit=4, content="a b")
    await memory_service.append_line(repos, AGENT, "notes", "c")  # v2: a b / c

    with pytest.raises(VersionNotFound) as unknown:
        await memory_service.restore_version(repos, AGENT, "notes", 3)
    assert unknown.value.details["current_version"] == 2
    with pytest.raises(VersionMismatch):
        await memory_service.restore_version(repos, AGENT, "notes", 1, expected=1)

    await memory_service.write_lines(repos, AGENT, "notes", ["one"])  # v3
    await memory_service.update_block(repos, AGENT, "notes", word_limit=1)  # v4
    # Version 2 held 3 words: more than the block may hold now, and more than it holds.
    with pytest.raises(BlockFull):
        await memory_service.restore_version(repos, AGENT, "notes", 2)
    assert (await memory_service.read_block(repos, AGENT, "notes")).version == 4


async def test_a_restore_across_a_rewrite_recorded_without_its_lines_is_refused(
    table: Table,
) -> None:
    repos = Repositories.over(table)
    await memory_service.ensure_default_blocks(repos, AGENT)
    await memory_service.write_lines(repos, AGENT, "human", ["b", "a"])  # v2
    await memory_service.write_lines(repos, AGENT, "human", ["a", "b", "c"])  # v3
    definition, _ = await repos.memory.get_block(AGENT, "human")
    assert definition is not None
    # Version 3 as rewrites were recorded before they kept their earlier lines.
    key = keys.core_memory_change(AGENT, "human", definition.created_at, 3)
    old = await table.get(key)
    assert old is not None
    assert old["previous_lines"] == ["b", "a"]
    await table.put({k: v for k, v in old.items() if k != "previous_lines"})

    with pytest.raises(HistoryIncomplete) as refused:
        await memory_service.restore_version(repos, AGENT, "human", 2)
    assert "version 3 rewrote the block" in refused.value.message
    # Later versions are still within reach.
    same = await memory_service.restore_version(repos, AGENT, "human", 3)
    assert list(same.lines) == ["a", "b", "c"]


async def test_a_version_older_than_the_history_is_refused(table: Table) -> None:
    repos = Repositories.over(table)
    await memory_service.ensure_default_blocks(repos, AGENT)
    for line in ("a", "b", "c"):
        await memory_service.append_line(repos, AGENT, "human", line)  # v2, v3, v4
    definition, _ = await repos.memory.get_block(AGENT, "human")
    assert definition is not None
    # A block older than its history: its first two changes were never recorded.
    for version in (2, 3):
        await table.delete(keys.core_memory_change(AGENT, "human", definition.created_at, version))

    with pytest.raises(HistoryIncomplete):
        await memory_service.restore_version(repos, AGENT, "human", 2)
    back = await memory_service.restore_version(repos, AGENT, "human", 3)
    assert list(back.lines) == ["a", "b"]


def replicas(repos: Repositories, clock: FrozenClock) -> tuple[SearchEngine, SearchEngine]:
    """Two search engines over one table, as two servers hold them."""
    return SearchEngine(repos.search, None, clock), SearchEngine(repos.search, None, clock)


async def found(engine: SearchEngine, query: str) -> list[str]:
    page = await archival.search(engine, AGENT, query, mode="lexical", include_history=True)
    return [m.memory_id for m in page.memories]


async def test_a_deleted_memory_is_hidden_then_restored_exactly_on_every_replica(
    table: Table, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    one, other = replicas(repos, clock)
    kept = await archival.insert(
        repos,
        one,
        AGENT,
        "Alice plays the cello on Sundays",
        category="preference",
        context="music",
        confidence=0.8,
        tags=["user"],
    )
    memory = kept.memory
    stored = (await repos.memory.archival_items(AGENT, [memory.memory_id]))[memory.memory_id]
    assert await found(other, "cello") == [memory.memory_id]

    clock.advance(5)
    until = await archival.delete_memory(repos, one, AGENT, memory.memory_id, undo_seconds=600)
    assert until.timestamp() == pytest.approx(clock.now() + 600, abs=1)
    for engine in (one, other):
        assert await found(engine, "cello") == []
    assert await repos.memory.get_archival(AGENT, memory.memory_id) is None
    listed, _ = await archival.list_memories(repos, AGENT)
    assert listed == []

    clock.advance(599)  # still inside the window
    back = await archival.restore_memory(repos, one, AGENT, memory.memory_id)
    assert back == memory
    again = (await repos.memory.archival_items(AGENT, [memory.memory_id]))[memory.memory_id]
    assert again == stored  # the same item: id, key, times, vector and all
    for engine in (one, other):
        assert await found(engine, "cello") == [memory.memory_id]
    assert await repos.memory.deleted_archival(AGENT, memory.memory_id) is None
    # A retry of the restore is safe: the memory, as it is.
    assert await archival.restore_memory(repos, other, AGENT, memory.memory_id) == memory
    # Its text is guarded again: the same text inserted is this memory.
    same = await archival.insert(repos, other, AGENT, "alice plays the CELLO on sundays")
    assert (same.created, same.memory.memory_id) == (False, memory.memory_id)


async def test_after_the_window_a_deleted_memory_is_gone_for_good(
    table: Table, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    engine = SearchEngine(repos.search, None, clock)
    memory = (await archival.insert(repos, engine, AGENT, "Bob's locker code is 4512")).memory
    await archival.delete_memory(repos, engine, AGENT, memory.memory_id, undo_seconds=60)
    assert await repos.memory.deleted_archival(AGENT, memory.memory_id) is not None

    clock.advance(61)
    # No sweep ran: the copy's TTL alone hides it, on every engine.
    assert await repos.memory.deleted_archival(AGENT, memory.memory_id) is None
    with pytest.raises(RestoreWindowPassed) as refused:
        await archival.restore_memory(repos, engine, AGENT, memory.memory_id)
    assert refused.value.status_code == 404
    assert await found(engine, "locker") == []


async def test_a_restore_after_the_same_text_was_stored_again_says_so(
    table: Table, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    engine = SearchEngine(repos.search, None, clock)
    first = (await archival.insert(repos, engine, AGENT, "Carol is allergic to peanuts")).memory
    await archival.delete_memory(repos, engine, AGENT, first.memory_id)
    clock.advance(1)
    anew = await archival.insert(repos, engine, AGENT, "Carol is allergic to peanuts")
    assert anew.created
    assert anew.memory.memory_id != first.memory_id

    with pytest.raises(RestoreConflict) as refused:
        await archival.restore_memory(repos, engine, AGENT, first.memory_id)
    assert refused.value.details["existing_memory_id"] == anew.memory.memory_id
    assert await found(engine, "peanuts") == [anew.memory.memory_id]
    assert await repos.memory.get_archival(AGENT, first.memory_id) is None


async def test_a_rewrite_too_large_to_keep_its_earlier_lines_cannot_be_undone(
    repos: Repositories,
) -> None:
    await memory_service.ensure_default_blocks(repos, AGENT)
    before = [f"{i:02d}" + "a" * 1998 for i in range(20)]  # 40,000 characters
    after = [f"{i:02d}" + "b" * 1998 for i in range(20)]
    await memory_service.write_lines(repos, AGENT, "human", before)  # v2: kept whole
    await memory_service.write_lines(repos, AGENT, "human", after)  # v3: 120,000 in all
    changes, _ = await memory_service.block_history(repos, AGENT, "human", limit=2)
    assert changes[0].previous_lines is None
    assert changes[0].removed == before
    assert changes[1].previous_lines == []

    with pytest.raises(HistoryIncomplete):
        await memory_service.restore_version(repos, AGENT, "human", 2)
    assert list((await memory_service.read_block(repos, AGENT, "human")).lines) == after


async def test_no_tool_retrieves_a_deleted_memory_until_it_is_restored(
    ctx: ToolContext, repos: Repositories, search: SearchEngine
) -> None:
    said = await call(ctx, "archival_memory_insert", content="Gina's passport expires in June")
    assert said.startswith("Inserted")
    memory = (await archival.list_memories(repos, AGENT))[0][0]
    await archival.delete_memory(repos, search, AGENT, memory.memory_id)
    gone = await call(ctx, "archival_memory_search", query="passport")
    assert "no memories match" in gone
    await archival.restore_memory(repos, search, AGENT, memory.memory_id)
    back = await call(ctx, "archival_memory_search", query="passport")
    assert "Gina's passport expires in June" in back
