"""A `Table` around another one: every call goes to the wrapped table through one method,
`around`, so a wrapper that watches calls (times them, counts them) overrides that method
instead of writing the whole protocol out again. MeasuredTable (api/observability/store.py)
and RoundCounter (api/store/rounds.py) are two."""

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from api.store import rules
from api.store.table import (
    PK,
    SK,
    Condition,
    Item,
    Key,
    Page,
    Put,
    SkCondition,
    Table,
    TxOp,
)

T = TypeVar("T")
# What a call touched, as `pk sk` (or `pk prefix` for a query, the entity for a scan, a
# transaction's first key, empty for batches): made only by a wrapper that asks for it.
Target = Callable[[], str]


def _none() -> str:
    return ""


class TableWrapper:
    def __init__(self, table: Table) -> None:
        self.table = table

    async def around(self, operation: str, target: Target, call: Callable[[], Awaitable[T]]) -> T:
        """Make `call` (the wrapped table's `operation`); a subclass adds what it watches."""
        return await call()

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def engine(self) -> str:
        return self.table.engine

    async def create(self) -> None:
        await self.around("create", _none, self.table.create)

    async def ping(self) -> None:
        await self.around("ping", _none, self.table.ping)

    async def close(self) -> None:
        await self.around("close", _none, self.table.close)

    async def sweep_expired(self) -> int:
        return await self.around("sweep_expired", _none, self.table.sweep_expired)

    async def get(self, key: Key) -> Item | None:
        return await self.around("get", lambda: _key(key), lambda: self.table.get(key))

    async def put(self, item: Item, *, condition: Condition | None = None) -> None:
        await self.around(
            "put",
            lambda: f"{item.get(PK)} {item.get(SK)}",
            lambda: self.table.put(item, condition=condition),
        )

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
        return await self.around(
            "update",
            lambda: _key(key),
            lambda: self.table.update(
                key,
                set=set,
                set_if_absent=set_if_absent,
                add=add,
                remove=remove,
                condition=condition,
            ),
        )

    async def delete(self, key: Key, *, condition: Condition | None = None) -> None:
        await self.around(
            "delete", lambda: _key(key), lambda: self.table.delete(key, condition=condition)
        )

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
        return await self.around(
            "query",
            lambda: f"{pk} {sk.value}" if sk else pk,
            lambda: self.table.query(
                pk, sk=sk, index=index, forward=forward, limit=limit, cursor=cursor
            ),
        )

    async def scan(
        self, *, entity: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Page:
        return await self.around(
            "scan",
            lambda: entity or "",
            lambda: self.table.scan(entity=entity, limit=limit, cursor=cursor),
        )

    async def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        return await self.around("batch_get", _none, lambda: self.table.batch_get(keys))

    async def batch_write(self, *, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        await self.around(
            "batch_write", _none, lambda: self.table.batch_write(puts=puts, deletes=deletes)
        )

    async def transact_write(self, ops: Sequence[TxOp]) -> None:
        await self.around(
            "transact_write", lambda: _first_key(ops), lambda: self.table.transact_write(ops)
        )

    async def put_each(self, puts: Sequence[Put]) -> list[bool]:
        return await self.around(
            "put_each", lambda: _first_key(puts), lambda: self.table.put_each(puts)
        )


def _key(key: Key) -> str:
    return f"{key.pk} {key.sk}"


def _first_key(ops: Sequence[TxOp]) -> str:
    return _key(rules.op_key(ops[0])) if ops else ""
