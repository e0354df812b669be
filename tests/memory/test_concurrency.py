"""Concurrent writers on every engine: no lost update, no duplicate memory."""

import asyncio

from api.kit.clock import FrozenClock
from api.memory import archival
from api.memory import service as memory_service
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.table import Table
from tests.contract.conftest import skip_on_moto
from tests.stored import all_archival

AGENT = "agent-1"


async def test_twenty_concurrent_appends_all_land(table: Table, engine: str) -> None:
    repos = Repositories.over(table)
    skip_on_moto(engine, "its in-process tables are not thread-safe; conditional puts race")
    await memory_service.ensure_default_blocks(repos, AGENT)
    lines = [f"Fact {i}: value {i}" for i in range(20)]
    changes = await asyncio.gather(
        *(memory_service.append_line(repos, AGENT, "human", line) for line in lines)
    )
    assert all(change.changed for change in changes)
    block = await memory_service.read_block(repos, AGENT, "human")
    assert sorted(block.lines) == sorted(lines)
    assert block.version == 1 + len(lines)
    # Each writer was told the line number its line really got.
    assert {c.line_number: c.line for c in changes} == dict(enumerate(block.lines, 1))


async def test_concurrent_edits_of_different_kinds_all_land(table: Table, engine: str) -> None:
    repos = Repositories.over(table)
    skip_on_moto(engine, "its in-process tables are not thread-safe; conditional puts race")
    await memory_service.ensure_default_blocks(repos, AGENT)
    for line in ["keep 1", "replace me", "keep 2"]:
        await memory_service.append_line(repos, AGENT, "human", line)
    await asyncio.gather(
        memory_service.replace_line(repos, AGENT, "human", 2, "replaced"),
        *(memory_service.append_line(repos, AGENT, "human", f"new {i}") for i in range(5)),
    )
    block = await memory_service.read_block(repos, AGENT, "human")
    assert block.lines[:3] == ("keep 1", "replaced", "keep 2")
    assert sorted(block.lines[3:]) == [f"new {i}" for i in range(5)]


async def test_ten_parallel_inserts_of_the_same_text_make_one_memory(
    table: Table, engine: str, clock: FrozenClock
) -> None:
    skip_on_moto(engine, "its in-process tables are not thread-safe; transactions race")
    repos = Repositories.over(table)
    text = "John drinks 3 cups of coffee daily, prefers dark roast."
    results = await asyncio.gather(
        *(
            archival.insert(repos, SearchEngine(repos.search, None, clock), AGENT, text)
            for _ in range(10)
        )
    )
    assert sum(r.created for r in results) == 1
    assert len({r.memory.memory_id for r in results}) == 1
    stored = await all_archival(repos.memory, AGENT)
    assert [m.content for m in stored] == [text]


async def test_default_blocks_are_made_once_under_concurrency(table: Table, engine: str) -> None:
    repos = Repositories.over(table)
    skip_on_moto(engine, "its in-process tables are not thread-safe; transactions race")
    await asyncio.gather(*(memory_service.ensure_default_blocks(repos, AGENT) for _ in range(5)))
    names = [b.name for b in await memory_service.list_blocks(repos, AGENT)]
    assert names == ["human", "persona"]


async def test_deleting_an_agents_memory_removes_every_item(
    table: Table, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    await memory_service.ensure_default_blocks(repos, AGENT, persona="Helpful\nCurious")
    await memory_service.ensure_default_blocks(repos, "other-agent")
    await memory_service.create_block(repos, AGENT, "notes", word_limit=5)
    await memory_service.append_line(repos, AGENT, "notes", "one two three four")
    await repos.memory.add_warning_turn(AGENT, "notes")
    search = SearchEngine(repos.search, None, clock)
    for i in range(120):  # more than a page
        await archival.insert(repos, search, AGENT, f"memory {i}")
    deleted = await memory_service.delete_all(repos, search, AGENT)
    # blocks (definition, lines), the append's line history, a warning, memories with their
    # guards, and search's version with one change per insert and per chunk of 90 deleted
    assert deleted == 3 * 2 + 1 + 1 + 2 * 120 + 1 + 120 + 2
    assert (await table.query(f"Agent#{AGENT}")).items == []
    assert [b.name for b in await memory_service.list_blocks(repos, "other-agent")] == [
        "human",
        "persona",
    ]
