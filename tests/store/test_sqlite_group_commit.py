"""Group commit in the SQLite adapter: writes queued together commit in one transaction,
each in its own savepoint, with the semantics each write has alone."""

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import (
    AttrEquals,
    ConditionFailed,
    InvalidItem,
    ItemAbsent,
    Key,
    Put,
    StoreError,
    Throttled,
    TransactionCancelled,
)


def key(n: int) -> Key:
    return Key("group#1", f"item#{n:03}")


class Held(SqliteTable):
    async def hold(self, gate: threading.Event) -> bool:
        """A call that keeps the store's thread busy until the gate opens."""
        return await self._run(lambda conn: gate.wait(10))

    async def lose_transaction(self) -> None:
        """A write during which SQLite rolls the whole transaction back on its own, as it
        does on a full disk or an I/O error."""

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("disk I/O error")

        await self._run_write(write)


@pytest.fixture
async def table(tmp_path: Path) -> AsyncIterator[Held]:
    table = Held(tmp_path / "group.db", "group", load_definition(), busy_timeout_ms=200)
    await table.create()
    yield table
    await table.close()


async def stored(table: SqliteTable, n: int) -> int | None:
    item = await table.get(key(n))
    return None if item is None else int(item["v"])


async def test_writes_made_together_commit_in_one_transaction(table: Held) -> None:
    await asyncio.gather(*(table.put({**key(n).as_item(), "v": n}) for n in range(20)))

    assert table.group_commits == (1, 20)
    assert [await stored(table, n) for n in range(20)] == list(range(20))


async def test_writes_queued_while_the_thread_is_busy_commit_together(table: Held) -> None:
    gate = threading.Event()
    busy = asyncio.ensure_future(table.hold(gate))
    await asyncio.sleep(0.05)  # the thread holds the gate
    writes = []
    for n in range(5):  # each made in a pass of its own
        writes.append(asyncio.ensure_future(table.put({**key(n).as_item(), "v": n})))
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    assert not any(w.done() for w in writes)
    gate.set()
    await asyncio.gather(busy, *writes)

    assert table.group_commits == (1, 5)
    assert [await stored(table, n) for n in range(5)] == list(range(5))


async def test_a_failed_condition_fails_that_write_alone(table: Held) -> None:
    await table.put({**key(3).as_item(), "v": 99})

    outcomes = await asyncio.gather(
        *(
            table.put({**key(n).as_item(), "v": n}, condition=ItemAbsent())
            for n in range(6)  # item 3 exists
        ),
        table.transact_write(  # refused whole: its second condition fails
            [
                Put({**key(10).as_item(), "v": 10}),
                Put({**key(3).as_item(), "v": 11}, condition=AttrEquals("v", 1)),
            ]
        ),
        table.put({**key(12).as_item(), "v": set()}),  # an empty set: DynamoDB refuses it
        table.update(key(13), add={"v": 13}),
        return_exceptions=True,
    )

    assert isinstance(outcomes[3], ConditionFailed)
    assert isinstance(outcomes[6], TransactionCancelled)
    assert outcomes[6].labels is not None
    assert isinstance(outcomes[7], InvalidItem)
    assert [o for i, o in enumerate(outcomes) if i not in (3, 6, 7)][:-1] == [None] * 5
    assert table.group_commits == (1, 9)
    assert [await stored(table, n) for n in range(6)] == [0, 1, 2, 99, 4, 5]
    assert await stored(table, 10) is None  # the cancelled transaction left nothing
    assert await stored(table, 12) is None
    assert await stored(table, 13) == 13


async def test_writes_to_one_key_keep_their_order(table: Held) -> None:
    k = key(1)
    await asyncio.gather(
        table.put({**k.as_item(), "v": 1}),
        table.update(k, add={"v": 10}),
        table.delete(k, condition=AttrEquals("v", 11)),
        table.put({**k.as_item(), "v": 5}, condition=ItemAbsent()),
        table.update(k, add={"v": 100}),
    )

    assert await stored(table, 1) == 105
    assert table.group_commits == (1, 5)


async def test_a_read_made_with_writes_is_answered(table: Held) -> None:
    await table.put({**key(1).as_item(), "v": 1})
    got, _, _ = await asyncio.gather(
        table.get(key(1)),
        table.put({**key(2).as_item(), "v": 2}),
        table.put({**key(3).as_item(), "v": 3}),
    )
    assert got is not None
    assert got["v"] == 1


async def test_a_lost_transaction_loses_no_acknowledged_write(table: Held) -> None:
    outcomes = await asyncio.gather(
        table.put({**key(1).as_item(), "v": 1}),
        table.lose_transaction(),
        table.put({**key(2).as_item(), "v": 2}),
        return_exceptions=True,
    )

    assert isinstance(outcomes[0], StoreError)  # rolled back with the transaction
    assert "not stored" in str(outcomes[0])
    assert isinstance(outcomes[1], StoreError)
    assert outcomes[2] is None  # ran alone after it
    assert await stored(table, 1) is None
    assert await stored(table, 2) == 2


async def test_a_busy_database_refuses_the_group_and_stores_none_of_it(
    table: Held, tmp_path: Path
) -> None:
    other = sqlite3.connect(tmp_path / "group.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        outcomes = await asyncio.gather(
            *(table.put({**key(n).as_item(), "v": n}) for n in range(3)),
            return_exceptions=True,
        )
    finally:
        other.execute("ROLLBACK")
        other.close()

    assert all(isinstance(o, Throttled) for o in outcomes)
    assert [await stored(table, n) for n in range(3)] == [None, None, None]


CRASH = textwrap.dedent(
    """
    import asyncio, os, sys
    from api.store.definition import load_definition
    from api.store.sqlite import SqliteTable
    from api.store.table import Key

    async def main() -> None:
        table = SqliteTable(sys.argv[1], "group", load_definition())
        await table.create()
        await table.put({**Key("group#1", "acknowledged").as_item(), "v": 1})
        print("acknowledged", flush=True)

        def crash(conn: object) -> None:
            os._exit(9)  # killed between the savepoints and the commit

        SqliteTable._commit = staticmethod(crash)
        await asyncio.gather(
            *(table.put({**Key("group#1", f"queued#{n}").as_item(), "v": n}) for n in range(3))
        )
        print("unreachable", flush=True)

    asyncio.run(main())
    """
)


def test_a_crash_before_the_commit_loses_only_unacknowledged_writes(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    done = subprocess.run(
        [sys.executable, "-c", CRASH, str(path)], capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 9, done.stderr
    assert done.stdout.split() == ["acknowledged"]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    sks = [row[0] for row in conn.execute('SELECT sk FROM "group" ORDER BY sk')]
    conn.close()
    assert sks == ["acknowledged"]
