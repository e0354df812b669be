"""RoundCounter on a real SQLite table: sequential awaits are one round each, concurrent
calls share one, and every call reaches the wrapped table unchanged."""

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api.store.definition import load_definition
from api.store.rounds import Call, RoundCounter, rounds
from api.store.sqlite import SqliteTable
from api.store.table import Item, Key

KEYS = [Key("rounds#a", "item"), Key("rounds#b", "item"), Key("rounds#c", "item")]


class HeldGets(SqliteTable):
    """Holds every `get` until `width` of them have started, so that they overlap by
    construction rather than by timing."""

    def __init__(self, path: Path, width: int) -> None:
        super().__init__(path, "rounds", load_definition())
        self.width = width
        self.started = 0
        self.all_started = asyncio.Event()

    async def get(self, key: Key) -> Item | None:
        self.started += 1
        if self.started == self.width:
            self.all_started.set()
        await self.all_started.wait()
        return await super().get(key)


@pytest.fixture
async def counter(tmp_path: Path) -> AsyncIterator[RoundCounter]:
    table = RoundCounter(SqliteTable(tmp_path / "rounds.db", "rounds", load_definition()))
    await table.create()
    yield table
    await table.close()


async def test_sequential_awaits_are_a_round_each(counter: RoundCounter) -> None:
    mark = counter.mark()
    for key in KEYS:
        await counter.get(key)

    calls = counter.since(mark)
    assert [c.operation for c in calls] == ["get", "get", "get"]
    assert rounds(calls) == 3


async def test_gathered_reads_are_one_round(tmp_path: Path) -> None:
    held = HeldGets(tmp_path / "held.db", width=len(KEYS))
    counter = RoundCounter(held)
    await counter.create()
    try:
        mark = counter.mark()
        async with asyncio.timeout(10):
            await asyncio.gather(*(counter.get(key) for key in KEYS))
        calls = counter.since(mark)
    finally:
        await counter.close()

    assert held.started == 3
    assert [c.operation for c in calls] == ["get", "get", "get"]
    assert rounds(calls) == 1


async def test_a_round_after_a_gathered_one_counts_again(tmp_path: Path) -> None:
    held = HeldGets(tmp_path / "held.db", width=2)
    counter = RoundCounter(held)
    await counter.create()
    try:
        mark = counter.mark()
        async with asyncio.timeout(10):
            await asyncio.gather(counter.get(KEYS[0]), counter.get(KEYS[1]))
        await counter.query("rounds#c")
        calls = counter.since(mark)
    finally:
        await counter.close()

    assert rounds(calls) == 2


async def test_it_delegates_faithfully(counter: RoundCounter) -> None:
    item = {"pk": "rounds#put", "sk": "item", "text": "hello", "n": 3}
    mark = counter.mark()

    await counter.put(item)
    got = await counter.get(Key("rounds#put", "item"))
    page = await counter.query("rounds#put")

    assert got == item
    assert page.items == [item]
    assert counter.name == "rounds"
    assert counter.engine == "sqlite"
    calls = counter.since(mark)
    assert [(c.operation, c.target) for c in calls] == [
        ("put", "rounds#put item"),
        ("get", "rounds#put item"),
        ("query", "rounds#put"),
    ]
    assert all(c.start <= c.end for c in calls)


def test_rounds_chain_overlapping_intervals() -> None:
    def call(start: float, end: float) -> Call:
        return Call("get", "", start, end)

    assert rounds([]) == 0
    # b overlaps a, c overlaps b only: one round; d starts once all have ended.
    a, b, c, d = call(0, 2), call(1, 4), call(3, 5), call(5, 6)
    assert rounds([d, c, b, a]) == 2
