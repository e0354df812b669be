"""Counting sequential round trips to the store: what a request waits for, not how many
calls it makes.

A request's storage latency is set by how many times it waits for the store one after
another, so the runtime reads what it can concurrently. `RoundCounter` wraps any `Table`
and notes when each call started and ended; `rounds` turns those intervals into the number
of sequential rounds. Tests pin the count and benchmarks report it, without timing
assertions: the intervals only have to be ordered, which awaiting makes them.
"""

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from api.store import rules
from api.store.table import PK, SK, Condition, Item, Key, Page, SkCondition, Table, TxOp

READS = frozenset({"get", "query", "batch_get", "scan"})
WRITES = frozenset({"put", "update", "delete", "batch_write", "transact_write"})


@dataclass(frozen=True)
class Call:
    """One call to the table: the method, what it touched (`pk sk`, or `pk prefix` for a
    query; the entity for a scan; a transaction's first key; empty for batches), and when
    it started and ended (time.perf_counter)."""

    operation: str
    target: str
    start: float
    end: float


def rounds(calls: Iterable[Call]) -> int:
    """Sequential round trips: calls whose intervals overlap share a round; a new round
    begins with a call that starts once every call of the current round has ended."""
    count = 0
    round_end = float("-inf")
    for call in sorted(calls, key=lambda c: c.start):
        if call.start >= round_end:
            count += 1
            round_end = call.end
        else:
            round_end = max(round_end, call.end)
    return count


class RoundCounter:
    """A `Table` that delegates every call to `table` and records it in `calls`, in the
    order the calls finished. `mark()` then `since(mark)` gives the calls of one stretch."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.calls: list[Call] = []

    def mark(self) -> int:
        return len(self.calls)

    def since(self, mark: int) -> list[Call]:
        """The calls that finished after `mark()` returned `mark`."""
        return self.calls[mark:]

    @contextmanager
    def _timed(self, operation: str, target: str = "") -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.calls.append(Call(operation, target, start, time.perf_counter()))

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def engine(self) -> str:
        return self.table.engine

    async def create(self) -> None:
        with self._timed("create"):
            await self.table.create()

    async def ping(self) -> None:
        with self._timed("ping"):
            await self.table.ping()

    async def close(self) -> None:
        with self._timed("close"):
            await self.table.close()

    async def sweep_expired(self) -> int:
        with self._timed("sweep_expired"):
            return await self.table.sweep_expired()

    async def get(self, key: Key) -> Item | None:
        with self._timed("get", f"{key.pk} {key.sk}"):
            return await self.table.get(key)

    async def put(self, item: Item, *, condition: Condition | None = None) -> None:
        with self._timed("put", f"{item.get(PK)} {item.get(SK)}"):
            await self.table.put(item, condition=condition)

    async def update(
        self,
        key: Key,
        *,
        set: Mapping[str, Any] | None = None,
        set_if_absent: Mapping[str, Any] | None = None,
        add: Mapping[str, Any] | None = None,
        remove: Sequence[str] = (),
        condition: Condition | None = None,
    ) -> Item:
        with self._timed("update", f"{key.pk} {key.sk}"):
            return await self.table.update(
                key,
                set=set,
                set_if_absent=set_if_absent,
                add=add,
                remove=remove,
                condition=condition,
            )

    async def delete(self, key: Key, *, condition: Condition | None = None) -> None:
        with self._timed("delete", f"{key.pk} {key.sk}"):
            await self.table.delete(key, condition=condition)

    async def query(
        self,
        pk: str,
        *,
        sk: SkCondition | None = None,
        index: str | None = None,
        forward: bool = True,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page:
        with self._timed("query", f"{pk} {sk.value}" if sk else pk):
            return await self.table.query(
                pk, sk=sk, index=index, forward=forward, limit=limit, cursor=cursor
            )

    async def scan(
        self, *, entity: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Page:
        with self._timed("scan", entity or ""):
            return await self.table.scan(entity=entity, limit=limit, cursor=cursor)

    async def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        with self._timed("batch_get"):
            return await self.table.batch_get(keys)

    async def batch_write(self, *, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        with self._timed("batch_write"):
            await self.table.batch_write(puts=puts, deletes=deletes)

    async def transact_write(self, ops: Sequence[TxOp]) -> None:
        with self._timed("transact_write", _first_key(ops)):
            await self.table.transact_write(ops)


def _first_key(ops: Sequence[TxOp]) -> str:
    if not ops:
        return ""
    key = rules.op_key(ops[0])
    return f"{key.pk} {key.sk}"
