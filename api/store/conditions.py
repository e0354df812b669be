"""What conditions and updates mean, evaluated in Python for engines without expressions."""

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from api.store import codec
from api.store.table import (
    PK,
    TTL,
    AllOf,
    AnyOf,
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


def live(item: Item | None, now: float) -> Item | None:
    """The item if it is live; an expired item is, for every purpose, no item."""
    return item if is_live(item, now) else None


def holds(condition: Condition, current: Item | None, now: float) -> bool:
    """Whether `condition` holds for `current`, the stored item (None when there is none)."""
    current = live(current, now)
    if isinstance(condition, ItemAbsent):
        return current is None
    if isinstance(condition, ItemExists):
        return current is not None
    if isinstance(condition, AllOf):
        return all(holds(c, current, now) for c in condition.conditions)
    if isinstance(condition, AnyOf):
        return any(holds(c, current, now) for c in condition.conditions)
    attrs: Mapping[str, Any] = current or {}
    if isinstance(condition, AttrAbsent):
        return condition.name not in attrs
    if isinstance(condition, AttrExists):
        return condition.name in attrs
    if isinstance(condition, AttrEquals):
        return condition.name in attrs and codec.same_value(attrs[condition.name], condition.value)
    raise InvalidItem(f"Unknown condition {condition!r}")


def apply_update(update: Update, current: Item | None) -> Item:
    """The item after `update` of the live item `current` (None: start from the key)."""
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
        item[name] = codec.add_numbers(
            base, Decimal(repr(delta)) if isinstance(delta, float) else delta
        )
    for name in update.remove:
        item.pop(name, None)
    assert item[PK] == update.key.pk
    return item
