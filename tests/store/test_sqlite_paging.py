"""The SQLite adapter's pages start where the cursor is: a page deep into a partition costs
what the first page costs (SQLite's own count of the steps it ran, not a time), so reading a
partition of any size page by page is linear. Each page is also the right one, both ways,
under every kind of range condition."""

import sqlite3
from pathlib import Path

import pytest

from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Item, Sk, SkCondition

PK = "paging#1"
ROWS = 2000
PAGE = 50


class Counted(SqliteTable):
    """A table that counts the virtual-machine steps SQLite runs for its calls."""

    steps = 0

    def _count(self, conn: sqlite3.Connection) -> None:
        def step() -> int:
            self.steps += 1
            return 0  # go on

        conn.set_progress_handler(step, 100)

    async def counting(self) -> None:
        await self._run(self._count)


def row(n: int) -> Item:
    return {"pk": PK, "sk": f"Row#{n:05d}", "n": n, "text": "x" * 200}


@pytest.fixture
async def table(tmp_path: Path) -> Counted:
    store = Counted(tmp_path / "paging.db", "paging", load_definition())
    await store.create()
    await store.batch_write(puts=[row(n) for n in range(ROWS)])
    # Rows around the prefix: a page must never reach them.
    await store.batch_write(puts=[{"pk": PK, "sk": "Rov"}, {"pk": PK, "sk": "Row$"}])
    await store.counting()
    return store


async def steps_of_page(table: Counted, sk: SkCondition, cursor: str | None, forward: bool) -> int:
    before = table.steps
    await table.query(PK, sk=sk, limit=PAGE, cursor=cursor, forward=forward)
    return table.steps - before


@pytest.mark.parametrize("forward", [True, False])
async def test_a_page_deep_in_a_partition_costs_what_the_first_costs(
    table: Counted, forward: bool
) -> None:
    sk = Sk.begins_with("Row#")
    first = await steps_of_page(table, sk, None, forward)
    cursor: str | None = None
    seen: list[int] = []
    while True:
        page = await table.query(PK, sk=sk, limit=PAGE, cursor=cursor, forward=forward)
        seen += [int(item["n"]) for item in page.items]
        cursor = page.cursor
        if cursor is None or len(seen) >= ROWS - PAGE:
            break
    assert cursor is not None
    last = await steps_of_page(table, sk, cursor, forward)
    # Read from the start, the last page would cost about ROWS / PAGE = 40 first pages.
    assert last <= 2 * first + 5, (first, last)
    assert seen == (
        list(range(len(seen))) if forward else list(range(ROWS - 1, -1, -1))[: len(seen)]
    )
    await table.close()


@pytest.mark.parametrize(
    "sk",
    [
        Sk.begins_with("Row#"),
        Sk.between("Row#00100", "Row#00899"),
        Sk.gt("Row#01500"),
        Sk.ge("Row#01500"),
        Sk.lt("Row#00300"),
        Sk.le("Row#00300"),
    ],
)
@pytest.mark.parametrize("forward", [True, False])
async def test_paging_reads_every_row_once_in_order(
    table: Counted, sk: SkCondition, forward: bool
) -> None:
    everything = await table.query(PK, sk=sk, forward=forward)
    paged: list[Item] = []
    cursor: str | None = None
    while True:
        page = await table.query(PK, sk=sk, limit=PAGE * 3, cursor=cursor, forward=forward)
        paged += page.items
        cursor = page.cursor
        if cursor is None:
            break
    assert [i["sk"] for i in paged] == [i["sk"] for i in everything.items]
    assert len(paged) > PAGE * 3  # more than one page
    await table.close()
