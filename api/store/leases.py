"""A lease: an item one holder owns until its `ttl`, taken with a conditional write and
renewed or freed only by its holder. A lease past its time is nobody's (the store's expiry
makes it absent). Conversations (one turn at a time) and seed 004's subjects (one memory
worker at a time) each keep theirs under their own key."""

import contextlib
import math

from api.store.table import AttrEquals, ConditionFailed, Delete, Item, ItemAbsent, Key, Table


async def take(table: Table, lease: Item, *, from_holder: str | None = None) -> bool:
    """`lease` written (it names its holder and its `ttl`) if nobody holds it, or, with
    `from_holder`, if that holder still does (a holder known to be dead)."""
    condition = ItemAbsent() if from_holder is None else AttrEquals("holder", from_holder)
    try:
        await table.put(lease, condition=condition)
    except ConditionFailed:
        return False
    return True


async def renew(table: Table, key: Key, holder: str, until: float) -> bool:
    """False when the lease is no longer `holder`'s (it lapsed and another took it)."""
    try:
        await table.update(
            key, set={"ttl": math.ceil(until)}, condition=AttrEquals("holder", holder)
        )
    except ConditionFailed:
        return False
    return True


async def release(table: Table, key: Key, holder: str) -> None:
    with contextlib.suppress(ConditionFailed):  # lapsed meanwhile: nothing of ours to free
        await table.delete(key, condition=AttrEquals("holder", holder))


def release_op(key: Key, holder: str, label: str) -> Delete:
    """The release, for a transaction the holder makes anyway (refused, under `label`,
    when the lease lapsed and another took it)."""
    return Delete(key, condition=AttrEquals("holder", holder), label=label)
