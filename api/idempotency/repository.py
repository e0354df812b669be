"""Idempotency records in the table: the only module that reads or writes them.

Every write after the claim is conditioned on the claim's `holder`, like a conversation's
lease: a request that lost its claim (it ran past `until` unrenewed and another request
took the key over) can neither overwrite nor free what the new holder does."""

import contextlib

from api.idempotency.models import IdempotencyRecord
from api.store import keys
from api.store.table import AttrEquals, ConditionFailed, ItemAbsent, Table, all_of


async def get(table: Table, email: str, key_hash: str) -> IdempotencyRecord | None:
    item = await table.get(keys.idempotency_record(email, key_hash))
    return IdempotencyRecord.from_dynamo_item(item) if item else None


async def claim(table: Table, record: IdempotencyRecord) -> bool:
    """The key for this request, if no live record holds it (an expired one is absent)."""
    try:
        await table.put(record.to_dynamo_item(), condition=ItemAbsent())
    except ConditionFailed:
        return False
    return True


async def take_over(table: Table, record: IdempotencyRecord, lapsed: IdempotencyRecord) -> bool:
    """The key for this request, in place of a claim that ran past its `until` unrenewed;
    False when its holder renewed it meanwhile, or another request took it over first."""
    try:
        await table.put(
            record.to_dynamo_item(),
            condition=all_of(
                AttrEquals("holder", lapsed.holder), AttrEquals("until", lapsed.until)
            ),
        )
    except ConditionFailed:
        return False
    return True


async def renew(table: Table, record: IdempotencyRecord, until: int) -> bool:
    """False when the claim is no longer `record`'s."""
    try:
        await table.update(
            record.key(),
            set={"until": until},
            condition=all_of(AttrEquals("holder", record.holder), AttrEquals("state", "running")),
        )
    except ConditionFailed:
        return False
    return True


async def settle(table: Table, record: IdempotencyRecord) -> bool:
    """The claim replaced by its outcome (`done` or `stream`); False when it is no longer
    `record.holder`'s."""
    try:
        await table.put(
            record.to_dynamo_item(),
            condition=all_of(AttrEquals("holder", record.holder), AttrEquals("state", "running")),
        )
    except ConditionFailed:
        return False
    return True


async def release(table: Table, record: IdempotencyRecord) -> None:
    """Free the key, so that a retry runs the request again."""
    with contextlib.suppress(ConditionFailed):  # taken over meanwhile: nothing of ours to free
        await table.delete(
            record.key(),
            condition=all_of(AttrEquals("holder", record.holder), AttrEquals("state", "running")),
        )
