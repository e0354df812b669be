"""Checks and cursors both adapters share, so bad input fails the same way on every engine,
before anything is written."""

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from api.store.definition import IndexDefinition, TableDefinition
from api.store.table import (
    MAX_TRANSACTION_ITEMS,
    PK,
    SK,
    Check,
    Delete,
    InvalidCursor,
    InvalidItem,
    InvalidKey,
    Item,
    Key,
    Put,
    SkCondition,
    TxOp,
    Update,
)


def check_key(key: Key) -> None:
    for name, value in ((PK, key.pk), (SK, key.sk)):
        if not isinstance(value, str) or not value:
            raise InvalidKey(f"The key attribute {name!r} must be a non-empty string.")


def item_key(item: Mapping[str, Any]) -> Key:
    key = Key(item.get(PK), item.get(SK))  # type: ignore[arg-type]
    check_key(key)
    return key


def check_item(definition: TableDefinition, item: Mapping[str, Any]) -> Key:
    key = item_key(item)
    for index in definition.indexes:
        for name in (index.pk, index.sk):
            if name in item and (not isinstance(item[name], str) or not item[name]):
                raise InvalidKey(f"The index key attribute {name!r} must be a non-empty string.")
    return key


def check_update(definition: TableDefinition, update: Update) -> None:
    check_key(update.key)
    names: list[str] = [*update.set, *update.set_if_absent, *update.add, *update.remove]
    if not names:
        raise InvalidItem("An update must change at least one attribute.")
    if len(names) != len(set(names)):
        raise InvalidItem("An update may name each attribute only once.")
    if PK in names or SK in names:
        raise InvalidItem("An update cannot change the item's key.")
    index_keys = {name for index in definition.indexes for name in (index.pk, index.sk)}
    if index_keys & set(update.add):
        raise InvalidKey("An index key attribute is a string; ADD cannot change it.")
    for name, delta in update.add.items():
        if isinstance(delta, bool) or not isinstance(delta, int | float | Decimal):
            raise InvalidItem(f"ADD to {name!r} needs a number.")
    for index in definition.indexes:
        for name in (index.pk, index.sk):
            for values in (update.set, update.set_if_absent):
                if name in values and (not isinstance(values[name], str) or not values[name]):
                    raise InvalidKey(
                        f"The index key attribute {name!r} must be a non-empty string."
                    )


def check_query(
    definition: TableDefinition,
    pk: str,
    sk: SkCondition | None,
    index: str | None,
    limit: int | None,
) -> IndexDefinition | None:
    """The index a query reads (None for the table), once its arguments are known good."""
    idx = definition.index(index) if index is not None else None
    if not isinstance(pk, str) or not pk:
        raise InvalidKey("A query needs a non-empty partition key.")
    if sk is not None:
        bounds = [sk.value] if sk.op != "between" else [sk.value, sk.upper]
        if not all(isinstance(b, str) and b for b in bounds):
            raise InvalidKey("A sort-key condition needs non-empty string values.")
        if sk.op == "between" and sk.value > (sk.upper or ""):
            raise InvalidKey("A between condition needs its lower bound first.")
    check_limit(limit, "query")
    return idx


def check_scan(entity: str | None, limit: int | None) -> None:
    if entity is not None and (not isinstance(entity, str) or not entity):
        raise InvalidItem("A scan's entity must be a non-empty string.")
    check_limit(limit, "scan")


def check_limit(limit: int | None, operation: str) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidItem(f"A {operation}'s limit must be at least 1.")


def op_key(op: TxOp) -> Key:
    if isinstance(op, Put):
        return item_key(op.item)
    if isinstance(op, Update | Delete | Check):
        return op.key
    raise InvalidItem(f"Unknown transaction operation {op!r}")


def check_transaction(definition: TableDefinition, ops: Sequence[TxOp]) -> list[Key]:
    if not ops:
        raise InvalidItem("A transaction needs at least one operation.")
    if len(ops) > MAX_TRANSACTION_ITEMS:
        raise InvalidItem(
            f"A transaction holds at most {MAX_TRANSACTION_ITEMS} operations, not {len(ops)}."
        )
    keys = []
    for op in ops:
        if isinstance(op, Put):
            keys.append(check_item(definition, op.item))
        elif isinstance(op, Update):
            check_update(definition, op)
            keys.append(op.key)
        else:
            check_key(op_key(op))
            keys.append(op_key(op))
    if len(set(keys)) != len(keys):
        raise InvalidItem("A transaction may touch each item only once.")
    return keys


def check_put_each(definition: TableDefinition, puts: Sequence[Put]) -> list[Key]:
    """The puts' keys; each item once, as the puts are made in no promised order."""
    keys = [check_item(definition, put.item) for put in puts]
    if len(set(keys)) != len(keys):
        raise InvalidItem("Puts made together may touch each item only once.")
    return keys


def unique_keys(keys: Iterable[Key]) -> list[Key]:
    """Keys without repeats, first occurrence kept (DynamoDB refuses repeats in a batch)."""
    return list(dict.fromkeys(keys))


def last_write_wins(puts: Sequence[Item], deletes: Sequence[Key]) -> list[Item | Key]:
    """A batch's writes with one per key, the later one kept, as if applied in order."""
    latest: dict[Key, Item | Key] = {}
    for item in puts:
        latest[item_key(item)] = item
    for key in deletes:
        check_key(key)
        latest.pop(key, None)
        latest[key] = key
    return list(latest.values())


# --- cursors -----------------------------------------------------------------------------


def cursor_names(index: IndexDefinition | None) -> tuple[str, ...]:
    """The attributes that position a cursor: the item's key, and the index key if any."""
    return (PK, SK) if index is None else (index.pk, index.sk, PK, SK)


def query_shape(index: IndexDefinition | None, sk: SkCondition | None, forward: bool) -> str:
    """A short digest of what a query selects, so a cursor only continues its own query."""
    return _digest(
        [
            index.name if index else "",
            forward,
            sk.op if sk else "",
            sk.value if sk else "",
            sk.upper if sk else "",
        ]
    )


def scan_shape(entity: str | None) -> str:
    """The digest of a scan, never equal to a query's: a cursor continues only its own scan."""
    return _digest(["scan", entity])


def _digest(shape: list[Any]) -> str:
    raw = json.dumps(shape, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(raw).hexdigest()[:12]


def encode_cursor(item: Mapping[str, Any], index: IndexDefinition | None, shape: str) -> str:
    position = {name: item[name] for name in cursor_names(index)}
    raw = json.dumps({"at": position, "q": shape}, ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(
    cursor: str, pk: str, index: IndexDefinition | None, shape: str
) -> dict[str, str]:
    """The position a cursor holds, refused unless it belongs to this very query."""
    position = _position(cursor, shape, cursor_names(index))
    partition = PK if index is None else index.pk
    if position[partition] != pk:
        raise InvalidCursor("The cursor belongs to another query.")
    return position


def decode_scan_cursor(cursor: str, shape: str) -> dict[str, str]:
    """The item key a scan's cursor holds, refused unless it belongs to this very scan."""
    return _position(cursor, shape, (PK, SK))


def _position(cursor: str, shape: str, names: tuple[str, ...]) -> dict[str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        decoded = json.loads(raw.decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError) as e:
        raise InvalidCursor("The cursor is malformed; pass back a cursor from a page.") from e
    if not isinstance(decoded, dict) or set(decoded) != {"at", "q"}:
        raise InvalidCursor("The cursor is malformed; pass back a cursor from a page.")
    if decoded["q"] != shape:
        raise InvalidCursor("The cursor belongs to another query or scan.")
    position = decoded["at"]
    if (
        not isinstance(position, dict)
        or set(position) != set(names)
        or not all(isinstance(position[n], str) and position[n] for n in names)
    ):
        raise InvalidCursor("The cursor is malformed; pass back a cursor from a page.")
    return position
