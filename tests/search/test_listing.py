"""Listings from the index (seed 003's list_memories, the archival route by category):
newest first with a total, across the index's main segment and its delta, page after page
without a gap or a repeat, as fresh as a search, and without reading the partition."""

from pathlib import Path

import pytest

from api.conversations.messages import service as messages
from api.embeddings.base import Embedder
from api.kit.clock import FrozenClock
from api.memory import archival
from api.memory.models import CATEGORIES, Category
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.search.repository import SearchRepository
from api.store.definition import load_definition
from api.store.rounds import RoundCounter
from api.store.sqlite import SqliteTable
from api.store.table import InvalidCursor, Table
from tests.search.conftest import AGENT
from tests.search.test_engine import OWNER, open_conversations, said


async def fill(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock, count: int, start: int = 0
) -> None:
    """Memories `start`..: the i-th of category CATEGORIES[i % 4], a second apart."""
    for i in range(start, start + count):
        clock.advance(1)
        await archival.insert(repos, engine, AGENT, f"Memory {i}.", category=CATEGORIES[i % 4])


def expected(count: int, category: Category | None = None) -> list[str]:
    chosen = [i for i in range(count) if category is None or CATEGORIES[i % 4] == category]
    return [f"Memory {i}." for i in reversed(chosen)]


async def every_page(
    engine: SearchEngine, categories: frozenset[str] | None, limit: int
) -> tuple[list[str], set[int]]:
    """Every memory, following cursors; and the totals the pages gave."""
    found: list[str] = []
    totals: set[int] = set()
    after: str | None = None
    while True:
        page = await archival.newest(engine, AGENT, categories=categories, limit=limit, after=after)
        found += [m.content for m in page.memories]
        totals.add(page.total)
        after = page.cursor
        if after is None:
            return found, totals


async def test_newest_first_by_category_with_the_total(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    await fill(repos, engine, clock, 10)
    facts = await archival.newest(engine, AGENT, categories=frozenset({"fact"}), limit=2)
    assert [m.content for m in facts.memories] == expected(10, "fact")[:2]
    assert (facts.total, facts.more) == (3, True)
    assert facts.memories[0].category == "fact"
    every = await archival.newest(engine, AGENT, limit=50)
    assert [m.content for m in every.memories] == expected(10)
    assert (every.total, every.more, every.cursor) == (10, False, None)
    two = await archival.newest(engine, AGENT, categories=frozenset({"fact", "pattern"}))
    assert [m.content for m in two.memories] == [
        m for m in expected(10) if int(m.split()[1][:-1]) % 4 in (0, 1)
    ]


@pytest.mark.parametrize("limit", [1, 3, 7])
async def test_pages_across_the_main_segment_and_the_delta(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock, limit: int
) -> None:
    await fill(repos, engine, clock, 12)
    await archival.newest(engine, AGENT)  # loads the index: these 12 are its main segment
    await fill(repos, engine, clock, 9, start=12)  # and these its delta
    old = (await archival.search(engine, AGENT, "Memory 5", mode="lexical")).memories
    await archival.delete_memory(
        repos, engine, AGENT, next(m for m in old if m.content == "Memory 5.").memory_id
    )
    # Memory 5 was a preference: gone from both listings.
    everything = [m for m in expected(21) if m != "Memory 5."]
    assert await every_page(engine, None, limit) == (everything, {20})
    preferences = [m for m in expected(21, "preference") if m != "Memory 5."]
    assert await every_page(engine, frozenset({"preference"}), limit) == (
        preferences,
        {len(preferences)},
    )


async def test_a_rebuilt_index_lists_the_same(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    await fill(repos, engine, clock, 5)
    await archival.newest(engine, AGENT)
    await fill(repos, engine, clock, 300, start=5)  # past the delta's limit: the next read rebuilds
    listed = await archival.newest(engine, AGENT, categories=frozenset({"capability"}), limit=3)
    assert [m.content for m in listed.memories] == expected(305, "capability")[:3]
    assert listed.total == len(expected(305, "capability"))


async def test_messages_are_never_listed(
    repos: Repositories, engine: SearchEngine, store: Table, clock: FrozenClock
) -> None:
    await fill(repos, engine, clock, 2)
    await open_conversations(store, "c1")
    await messages.record(repos, engine, OWNER, AGENT, said("c1", 1, "user", "Memory 9.", 2))
    assert (await messages.search(repos, engine, OWNER, AGENT, "Memory 9")).total == 1
    listed = await archival.newest(engine, AGENT)
    assert [m.content for m in listed.memories] == expected(2)
    assert listed.total == 2


async def test_a_cursor_that_is_not_a_memory_id_is_refused(engine: SearchEngine) -> None:
    with pytest.raises(InvalidCursor):
        await archival.newest(engine, AGENT, after="not-a-memory-id")


async def test_a_listing_reads_the_version_not_the_partition(
    tmp_path: Path, static: Embedder, clock: FrozenClock
) -> None:
    counter = RoundCounter(
        SqliteTable(tmp_path / "rounds.db", "listing-test", load_definition(), clock=clock)
    )
    table: Table = counter
    await table.create()
    engine = SearchEngine(SearchRepository(table), static, clock)
    await fill(Repositories.over(table), engine, clock, 40)
    await archival.newest(engine, AGENT)  # the first listing loads the index
    mark = counter.mark()
    listed = await archival.newest(engine, AGENT, categories=frozenset({"fact"}), limit=5)
    assert listed.total == 10
    assert [c.operation for c in counter.since(mark)] == ["get"]  # the agent's SearchVersion
    await table.close()
