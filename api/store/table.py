"""The storage port: one table with composite keys, the same semantics on every engine.

Items are plain dicts. Keys (`pk`, `sk` and the index key attributes) are non-empty strings.
Numbers come back as `int` when integral and `Decimal` otherwise (in their shortest form);
floats are stored as `Decimal`. An item whose numeric `ttl` (epoch seconds) has passed is no
item, on every engine, even before the engine deletes it: reads skip it, conditions see no
item, and an update starts from nothing.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

from api.errors import AppError

Item = dict[str, Any]

PK = "pk"
SK = "sk"
TTL = "ttl"
MAX_ITEM_BYTES = 400 * 1024
MAX_TRANSACTION_ITEMS = 100
BATCH_GET_CHUNK = 100
BATCH_WRITE_CHUNK = 25


class Key(NamedTuple):
    pk: str
    sk: str

    def as_item(self) -> Item:
        return {PK: self.pk, SK: self.sk}


# --- sort-key conditions for queries -------------------------------------------------

SkOp = Literal["eq", "begins_with", "between", "lt", "le", "gt", "ge"]


@dataclass(frozen=True)
class SkCondition:
    op: SkOp
    value: str
    upper: str | None = None  # the inclusive upper bound of `between`


class Sk:
    """Constructors for the sort-key conditions a query accepts."""

    @staticmethod
    def eq(value: str) -> SkCondition:
        return SkCondition("eq", value)

    @staticmethod
    def begins_with(prefix: str) -> SkCondition:
        return SkCondition("begins_with", prefix)

    @staticmethod
    def between(low: str, high: str) -> SkCondition:
        return SkCondition("between", low, high)

    @staticmethod
    def lt(value: str) -> SkCondition:
        return SkCondition("lt", value)

    @staticmethod
    def le(value: str) -> SkCondition:
        return SkCondition("le", value)

    @staticmethod
    def gt(value: str) -> SkCondition:
        return SkCondition("gt", value)

    @staticmethod
    def ge(value: str) -> SkCondition:
        return SkCondition("ge", value)


# --- write conditions ------------------------------------------------------------------


@dataclass(frozen=True)
class ItemAbsent:
    """No live item has this key (an expired item counts as absent)."""


@dataclass(frozen=True)
class ItemExists:
    """A live item has this key."""


@dataclass(frozen=True)
class AttrEquals:
    name: str
    value: Any


@dataclass(frozen=True)
class AttrAbsent:
    name: str


@dataclass(frozen=True)
class AttrExists:
    name: str


@dataclass(frozen=True)
class AllOf:
    conditions: tuple["Condition", ...]


@dataclass(frozen=True)
class AnyOf:
    conditions: tuple["Condition", ...]


Condition = ItemAbsent | ItemExists | AttrEquals | AttrAbsent | AttrExists | AllOf | AnyOf


def all_of(*conditions: Condition) -> AllOf:
    return AllOf(tuple(conditions))


def any_of(*conditions: Condition) -> AnyOf:
    return AnyOf(tuple(conditions))


# --- operations ------------------------------------------------------------------------

# An operation's `label` names its part in the transaction ("guard", "message", ...) so that
# a refusal is read by name, not by position: transactions are put together from parts that
# several modules make. It is no part of what the operation writes, so not of its equality.


@dataclass(frozen=True)
class Put:
    item: Item
    condition: Condition | None = None
    label: str = field(default="", compare=False)


@dataclass(frozen=True)
class Update:
    """SET, SET-if-absent, atomic ADD to numbers, REMOVE; top-level attributes only."""

    key: Key
    set: Mapping[str, Any] = field(default_factory=dict)
    set_if_absent: Mapping[str, Any] = field(default_factory=dict)
    add: Mapping[str, int | Any] = field(default_factory=dict)
    remove: Sequence[str] = ()
    condition: Condition | None = None
    label: str = field(default="", compare=False)


@dataclass(frozen=True)
class Delete:
    key: Key
    condition: Condition | None = None
    label: str = field(default="", compare=False)


@dataclass(frozen=True)
class Check:
    key: Key
    condition: Condition
    label: str = field(default="", compare=False)


TxOp = Put | Update | Delete | Check


@dataclass(frozen=True)
class Page:
    items: list[Item]
    cursor: str | None  # None exactly when no item follows


# --- typed errors ----------------------------------------------------------------------


class StoreError(AppError):
    status_code = 500
    code = "store_error"


class ConditionFailed(StoreError):
    status_code = 409
    code = "condition_failed"


CONDITION_FAILED = "ConditionalCheckFailed"  # the reason of an operation its condition refused


class TransactionCancelled(StoreError):
    """A transaction that wrote nothing. `reasons` has one entry per operation, in order:
    None, or why that operation failed; `labels` has the operations' labels, in the same
    order. Ask by label (`refused`, `failed`): several operations may share one."""

    status_code = 409
    code = "transaction_cancelled"

    def __init__(
        self, message: str, reasons: Sequence[str | None], *, labels: Sequence[str]
    ) -> None:
        super().__init__(message)
        self.reasons = list(reasons)
        self.labels = list(labels)

    def refused(self, label: str) -> bool:
        """Whether an operation labelled `label` was refused by its condition (not by a
        transient conflict, nor left undone because another one was refused)."""
        return any(reason == CONDITION_FAILED for reason in self._reasons_of(label))

    def failed(self, label: str) -> bool:
        """Whether an operation labelled `label` failed for any reason: refused by its
        condition, or (DynamoDB) in a conflict with another transaction, throttled, ..."""
        return any(reason is not None for reason in self._reasons_of(label))

    def _reasons_of(self, label: str) -> list[str | None]:
        # Not strict: an engine may cancel without naming reasons, and then names none.
        pairs = zip(self.labels, self.reasons, strict=False)
        return [reason for named, reason in pairs if named == label]


class ItemTooLarge(StoreError):
    status_code = 413
    code = "item_too_large"


class Throttled(StoreError):
    status_code = 503
    code = "store_throttled"


class WriteConflict(Throttled):
    """A write to an item a transaction was writing at that moment (DynamoDB's
    TransactionConflictException): nothing was written; a moment later it may be."""


class InvalidCursor(StoreError):
    status_code = 400
    code = "invalid_cursor"


class InvalidKey(StoreError):
    status_code = 400
    code = "invalid_key"


class InvalidItem(StoreError):
    status_code = 400
    code = "invalid_item"


class UnknownIndex(StoreError):
    code = "unknown_index"


# --- the port --------------------------------------------------------------------------


class Table(Protocol):
    """One table, two engines. Every method is safe to call concurrently."""

    @property
    def name(self) -> str: ...

    @property
    def engine(self) -> str: ...

    async def create(self) -> None:
        """Create the table from the shared definition if it does not exist."""
        ...

    async def ping(self) -> None:
        """Raise StoreError when the store cannot be reached."""
        ...

    async def close(self) -> None:
        """Release the engine; later calls raise StoreError."""
        ...

    async def sweep_expired(self) -> int:
        """Delete expired items where the engine does not (SQLite); how many were deleted."""
        ...

    async def get(self, key: Key) -> Item | None: ...

    async def put(self, item: Item, *, condition: Condition | None = None) -> None: ...

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
        """Apply the changes (creating the item if absent) and return the item as stored."""
        ...

    async def delete(self, key: Key, *, condition: Condition | None = None) -> None: ...

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
        """Items of one partition (of the table or of a secondary index) in sort-key order.

        A cursor continues only the query that made it (same partition, index, sort-key
        condition and direction). Index queries are eventually consistent on AWS.
        """
        ...

    async def scan(
        self, *, entity: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Page:
        """Every live item of the table (of one `entity` when given: the items' `entity`
        attribute), in no promised order, a page at a time. For admin tasks, never a request
        path: it reads the whole table.

        A page may hold fewer than `limit` items (none, even) while more follow; the cursor is
        None exactly when the scan is done. Without a limit the page is the whole table.
        A cursor continues only the scan that made it (same `entity`). No key comes back
        twice; an item written or deleted while a scan runs may or may not be seen.
        """
        ...

    async def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        """The live items among `keys`, in the order of `keys`; missing ones are left out."""
        ...

    async def batch_write(self, *, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        """Many writes, the last one per key kept. Every item is checked before anything is
        written, but a batch is not a transaction: on DynamoDB a throttled chunk can fail
        after others were written. Use transact_write for all-or-nothing."""
        ...

    async def transact_write(self, ops: Sequence[TxOp]) -> None:
        """All operations or none; TransactionCancelled says which condition failed."""
        ...

    async def put_each(self, puts: Sequence[Put]) -> list[bool]:
        """Each put made unless its own condition refuses it (False in its place), the
        others regardless: a refused condition is not all or nothing. In one transaction
        on SQLite (one commit, one hop to its thread); on DynamoDB as PutItems sent
        together, since a transaction there costs twice the write units. An item that
        cannot be stored (InvalidItem, ItemTooLarge) is refused before any is written,
        whatever the conditions, on both engines. Any other failure is raised: then none
        of the puts is made on SQLite, and some may have been on DynamoDB."""
        ...
