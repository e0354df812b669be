"""The background sweeps' loop (api/kit/periodic.py): work at once and again, a store
failure logged and tried again next time, any other error ending the loop; and the
expired-items sweep deleting an expired item from a real SQLite file."""

import asyncio
import logging
from pathlib import Path

import pytest

from api.kit import periodic
from api.kit.clock import FrozenClock
from api.main import sweep_expired
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Key, StoreError, Throttled


async def test_a_store_failure_is_logged_and_the_work_tried_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls = 0
    third = asyncio.Event()

    async def work() -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            third.set()
        if calls == 1:
            raise Throttled("The store is busy.")

    with caplog.at_level(logging.WARNING, logger=periodic.__name__):
        loop = asyncio.create_task(periodic.every(0, work, "testing the sweep", (StoreError,)))
        await third.wait()
        loop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loop
    assert calls == 3
    assert [r.getMessage() for r in caplog.records] == [
        "testing the sweep failed: The store is busy."
    ]


async def test_any_other_error_ends_the_loop() -> None:
    async def work() -> None:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        await periodic.every(0, work, "testing the sweep", (StoreError,))


async def test_the_expired_items_sweep_deletes_them(
    tmp_path: Path, clock: FrozenClock, caplog: pytest.LogCaptureFixture
) -> None:
    table = SqliteTable(tmp_path / "sweep.db", "sweep", load_definition(), clock=clock)
    await table.create()
    await table.put({"pk": "p", "sk": "old", "ttl": int(clock.now()) - 1})
    await table.put({"pk": "p", "sk": "new", "ttl": int(clock.now()) + 3600})
    with caplog.at_level(logging.INFO, logger="api.main"):
        sweeper = asyncio.create_task(sweep_expired(table, every_seconds=3600))
        for _ in range(1000):  # its first sweep is at once
            if "deleted 1 expired items" in caplog.text:
                break
            await asyncio.sleep(0.01)
        sweeper.cancel()
        await asyncio.gather(sweeper, return_exceptions=True)
    assert "deleted 1 expired items" in caplog.text
    assert await table.sweep_expired() == 0  # nothing left to delete
    assert await table.get(Key("p", "new")) is not None
    await table.close()
