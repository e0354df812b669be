"""A Table that times its calls: latency by operation and engine, errors by code, and a
span per call while tracing. Applied in the app's lifespan around whatever table the app
uses (`measured`), like RoundCounter (api/store/rounds.py) in tests; each call costs two
clock reads and one histogram observation."""

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from api.config import Settings
from api.observability import metrics, tracing
from api.store.table import StoreError, Table
from api.store.wrapper import TableWrapper, Target

T = TypeVar("T")

OPERATIONS = (
    "create",
    "ping",
    "sweep_expired",
    "get",
    "put",
    "update",
    "delete",
    "query",
    "scan",
    "batch_get",
    "batch_write",
    "transact_write",
    "put_each",
)
Started = tuple[float, Any]  # when, and the span (None unless tracing)


def measured(table: Table, settings: Settings) -> Table:
    """`table`, measured, unless nothing would read the measurements."""
    if settings.metrics == "off" and settings.tracing == "off":
        return table
    return MeasuredTable(table)


def unwrapped(table: Table) -> Table:
    """The engine's own table under the measurements (to ask engine-specific things)."""
    return table.table if isinstance(table, MeasuredTable) else table


class MeasuredTable(TableWrapper):
    def __init__(self, table: Table) -> None:
        super().__init__(table)
        engine = table.engine
        self._seconds = {op: metrics.STORE_SECONDS.labels(op, engine) for op in OPERATIONS}
        self._span_attributes = {
            op: {
                "db.system.name": engine,
                "db.operation.name": op,
                "db.collection.name": table.name,
            }
            for op in OPERATIONS
        }

    def _start(self, operation: str) -> Started:
        span = None
        if tracing.enabled():
            span = tracing.start_span(f"store.{operation}", self._span_attributes[operation])
        return time.perf_counter(), span

    def _end(self, operation: str, started: Started, error: BaseException | None = None) -> None:
        start, span = started
        self._seconds[operation].observe(time.perf_counter() - start)
        if isinstance(error, StoreError):
            metrics.STORE_ERRORS.labels(operation, self.table.engine, error.code).inc()
        if span is not None:
            tracing.end_span(span, error)

    async def around(self, operation: str, target: Target, call: Callable[[], Awaitable[T]]) -> T:
        if operation not in self._seconds:  # close: nothing to measure
            return await call()
        started = self._start(operation)
        try:
            result = await call()
        except BaseException as e:
            self._end(operation, started, e)
            raise
        self._end(operation, started)
        return result
