"""A Table that times its calls: latency by operation and engine, errors by code, and a
span per call while tracing. Applied in the app's lifespan around whatever table the app
uses (`measured`), like RoundCounter (api/store/rounds.py) in tests; each call costs two
clock reads and one histogram observation."""

import time
from collections.abc import Mapping, Sequence
from typing import Any

from api.config import Settings
from api.observability import metrics, tracing
from api.store.table import Condition, Item, Key, Page, SkCondition, StoreError, Table, TxOp

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


class MeasuredTable:
    def __init__(self, table: Table) -> None:
        self.table = table
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

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def engine(self) -> str:
        return self.table.engine

    async def close(self) -> None:
        await self.table.close()

    async def create(self) -> None:
        started = self._start("create")
        try:
            await self.table.create()
        except BaseException as e:
            self._end("create", started, e)
            raise
        self._end("create", started)

    async def ping(self) -> None:
        started = self._start("ping")
        try:
            await self.table.ping()
        except BaseException as e:
            self._end("ping", started, e)
            raise
        self._end("ping", started)

    async def sweep_expired(self) -> int:
        started = self._start("sweep_expired")
        try:
            deleted = await self.table.sweep_expired()
        except BaseException as e:
            self._end("sweep_expired", started, e)
            raise
        self._end("sweep_expired", started)
        return deleted

    async def get(self, key: Key) -> Item | None:
        started = self._start("get")
        try:
            item = await self.table.get(key)
        except BaseException as e:
            self._end("get", started, e)
            raise
        self._end("get", started)
        return item

    async def put(self, item: Item, *, condition: Condition | None = None) -> None:
        started = self._start("put")
        try:
            await self.table.put(item, condition=condition)
        except BaseException as e:
            self._end("put", started, e)
            raise
        self._end("put", started)

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
        started = self._start("update")
        try:
            item = await self.table.update(
                key,
                set=set,
                set_if_absent=set_if_absent,
                add=add,
                remove=remove,
                condition=condition,
            )
        except BaseException as e:
            self._end("update", started, e)
            raise
        self._end("update", started)
        return item

    async def delete(self, key: Key, *, condition: Condition | None = None) -> None:
        started = self._start("delete")
        try:
            await self.table.delete(key, condition=condition)
        except BaseException as e:
            self._end("delete", started, e)
            raise
        self._end("delete", started)

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
        started = self._start("query")
        try:
            page = await self.table.query(
                pk, sk=sk, index=index, forward=forward, limit=limit, cursor=cursor
            )
        except BaseException as e:
            self._end("query", started, e)
            raise
        self._end("query", started)
        return page

    async def scan(
        self, *, entity: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Page:
        started = self._start("scan")
        try:
            page = await self.table.scan(entity=entity, limit=limit, cursor=cursor)
        except BaseException as e:
            self._end("scan", started, e)
            raise
        self._end("scan", started)
        return page

    async def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        started = self._start("batch_get")
        try:
            items = await self.table.batch_get(keys)
        except BaseException as e:
            self._end("batch_get", started, e)
            raise
        self._end("batch_get", started)
        return items

    async def batch_write(self, *, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        started = self._start("batch_write")
        try:
            await self.table.batch_write(puts=puts, deletes=deletes)
        except BaseException as e:
            self._end("batch_write", started, e)
            raise
        self._end("batch_write", started)

    async def transact_write(self, ops: Sequence[TxOp]) -> None:
        started = self._start("transact_write")
        try:
            await self.table.transact_write(ops)
        except BaseException as e:
            self._end("transact_write", started, e)
            raise
        self._end("transact_write", started)
