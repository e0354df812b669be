"""What conditions and updates mean, evaluated in Python for engines without expressions."""

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from api.store import codec
from api.store.table import (
    PK,
    TTL,
    AllOf,
    AttrAbsent,
    AttrEquals,
    AttrExists,
    Condition,
    InvalidItem,
    Item,
    ItemAbsent,
    ItemExists,
    Update,
)


def is_live(item: Mapping[str, Any] | None, now: float) -> bool:
    """An item is live unless its numeric `ttl` has passed (as DynamoDB TTL would delete it)."""
    if item is None:
        return False
    ttl = item.get(TTL)
    if isinstance(ttl, bool) or not isinstance(ttl, int | float | Decimal):
        return True
    return ttl > now


def holds(condition: Condition, current: Item | None, now: float) -> bool:
    """Whether `condition` holds for `current`, the stored item (None when there is none)."""
    if isinstance(condition, ItemAbsent):
        return not is_live(current, now)
    if isinstance(condition, ItemExists):
        return is_live(current, now)
    if isinstance(condition, AllOf):
        return all(holds(c, current, now) for c in condition.conditions)
    attrs: Mapping[str, Any] = current or {}
    if isinstance(condition, AttrAbsent):
        return condition.name not in attrs
    if isinstance(condition, AttrExists):
        return condition.name in attrs
    if isinstance(condition, AttrEquals):
        expected = codec.from_wire_value(codec.to_wire_value(condition.value))
        return condition.name in attrs and attrs[condition.name] == expected
    raise InvalidItem(f"Unknown condition {condition!r}")


def apply_update(update: Update, current: Item | None) -> Item:
    """The item after `update`, which creates the item when there is none."""
    item: Item = dict(current) if current is not None else update.key.as_item()
    item.update(update.set)
    for name, value in update.set_if_absent.items():
        item.setdefault(name, value)
    for name, delta in update.add.items():
        base = item.get(name, 0)
        if isinstance(base, bool) or not isinstance(base, int | Decimal):
            raise InvalidItem(
                f"ADD to {name!r} needs a number, the item holds {type(base).__name__}."
            )
        item[name] = base + (Decimal(repr(delta)) if isinstance(delta, float) else delta)
    for name in update.remove:
        item.pop(name, None)
    assert item[PK] == update.key.pk
    return item
