"""The SQLite adapter sends calls made together to its thread as one job: each call is
still answered as soon as it ends, in order, and event loops sharing a table do not wait
on one another."""

import asyncio
import threading
from pathlib import Path

import pytest

from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Key, StoreError

KEY = Key("hops#1", "item")


class Gated(SqliteTable):
    async def wait_for(self, gate: threading.Event) -> bool:
        """A call that holds the store's thread until the gate opens."""
        return await self._run(lambda conn: gate.wait(10))


def table_at(tmp_path: Path) -> Gated:
    return Gated(tmp_path / "hops.db", "hops", load_definition())


async def test_a_call_is_answered_before_a_slow_one_made_with_it_ends(tmp_path: Path) -> None:
    table = table_at(tmp_path)
    await table.create()
    await table.put({**KEY.as_item(), "n": 1})
    gate = threading.Event()

    read = asyncio.ensure_future(table.get(KEY))
    slow = asyncio.ensure_future(table.wait_for(gate))  # the same pass: the same job
    got = await asyncio.wait_for(read, 5)  # answered while the slow call still runs
    assert got is not None
    assert got["n"] == 1
    assert not slow.done()
    gate.set()
    assert await slow is True
    await table.close()


async def test_calls_made_together_run_in_the_order_they_were_made(tmp_path: Path) -> None:
    table = table_at(tmp_path)
    await table.create()
    await asyncio.gather(
        table.put({**KEY.as_item(), "n": 1}),
        table.update(KEY, add={"n": 1}),
        table.update(KEY, add={"n": 10}),
    )
    got = await table.get(KEY)
    assert got is not None
    assert got["n"] == 12
    await table.close()


def test_a_loop_that_stops_with_a_call_queued_does_not_stall_others(tmp_path: Path) -> None:
    table = table_at(tmp_path)
    asyncio.run(table.create())
    gone = asyncio.new_event_loop()
    abandoned: list[asyncio.Future[object]] = []

    async def queue_and_leave() -> None:
        # Queued; its loop stops before sending it (Python warns of the pending task).
        abandoned.append(asyncio.ensure_future(table.get(KEY)))

    gone.run_until_complete(queue_and_leave())
    gone.close()

    async def read() -> None:
        await asyncio.wait_for(table.put({**KEY.as_item(), "n": 2}), 5)
        got = await asyncio.wait_for(table.get(KEY), 5)
        assert got is not None
        assert got["n"] == 2
        await table.close()

    asyncio.run(read())


async def test_a_call_that_finds_the_thread_gone_is_told_so(tmp_path: Path) -> None:
    table = table_at(tmp_path)
    await table.create()
    table._executor.shutdown()  # as a close() from another event loop would leave it

    with pytest.raises(StoreError, match="closed"):
        await asyncio.wait_for(table.get(KEY), 5)
