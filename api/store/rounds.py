"""Counting sequential round trips to the store: what a request waits for, not how many
calls it makes.

A request's storage latency is set by how many times it waits for the store one after
another, so the runtime reads what it can concurrently. `RoundCounter` wraps any `Table`
and notes when each call started and ended; `rounds` turns those intervals into the number
of sequential rounds. Tests pin the count and benchmarks report it, without timing
assertions: the intervals only have to be ordered, which awaiting makes them.
"""

import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from api.store.table import Table
from api.store.wrapper import TableWrapper, Target

T = TypeVar("T")

READS = frozenset({"get", "query", "batch_get", "scan"})
WRITES = frozenset({"put", "update", "delete", "batch_write", "transact_write", "put_each"})


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


class RoundCounter(TableWrapper):
    """A `Table` that delegates every call to `table` and records it in `calls`, in the
    order the calls finished. `mark()` then `since(mark)` gives the calls of one stretch."""

    def __init__(self, table: Table) -> None:
        super().__init__(table)
        self.calls: list[Call] = []

    def mark(self) -> int:
        return len(self.calls)

    def since(self, mark: int) -> list[Call]:
        """The calls that finished after `mark()` returned `mark`."""
        return self.calls[mark:]

    async def around(self, operation: str, target: Target, call: Callable[[], Awaitable[T]]) -> T:
        start = time.perf_counter()
        try:
            return await call()
        finally:
            self.calls.append(Call(operation, target(), start, time.perf_counter()))
