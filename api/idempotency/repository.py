"""Idempotency records in the table: the only module that reads or writes them.

Every write after the claim is conditioned on the claim's `holder`, like a conversation's
lease: a request that lost its claim (it ran past `until` unrenewed and another request
took the key over) can neither overwrite nor free what the new holder does."""

import contextlib

from api.idempotency.models import IdempotencyRecord
from api.store import keys
from api.store.table import AttrEquals, ConditionFailed, ItemAbsent, Table, all_of


class IdempotencyRepository:
    """Idempotency records, each written only by the request that holds its claim."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def get(self, email: str, key_hash: str) -> IdempotencyRecord | None:
        item = await self.table.get(keys.idempotency_record(email, key_hash))
        return IdempotencyRecord.from_dynamo_item(item) if item else None

    async def claim(self, record: IdempotencyRecord) -> bool:
        """The key for this request, if no live record holds it (an expired one is absent)."""
        try:
            await self.table.put(record.to_dynamo_item(), condition=ItemAbsent())
        except ConditionFailed:
            return False
        return True

    async def take_over(self, record: IdempotencyRecord, lapsed: IdempotencyRecord) -> bool:
        """The key for this request, in place of a claim that ran past its `until` unrenewed;
        False when its holder renewed it meanwhile, or another request took it over first."""
        try:
            await self.table.put(
                record.to_dynamo_item(),
                condition=all_of(
                    AttrEquals("holder", lapsed.holder), AttrEquals("until", lapsed.until)
                ),
            )
        except ConditionFailed:
            return False
        return True

    async def renew(self, record: IdempotencyRecord, until: int) -> bool:
        """False when the claim is no longer `record`'s."""
        try:
            await self.table.update(
                record.key(),
                set={"until": until},
                condition=all_of(
                    AttrEquals("holder", record.holder), AttrEquals("state", "running")
                ),
            )
        except ConditionFailed:
            return False
        return True

    async def settle(self, record: IdempotencyRecord) -> bool:
        """The claim replaced by its outcome (`done` or `stream`); False when it is no longer
        `record.holder`'s."""
        try:
            await self.table.put(
                record.to_dynamo_item(),
                condition=all_of(
                    AttrEquals("holder", record.holder), AttrEquals("state", "running")
                ),
            )
        except ConditionFailed:
            return False
        return True

    async def release(self, record: IdempotencyRecord) -> None:
        """Free the key, so that a retry runs the request again."""
        with contextlib.suppress(ConditionFailed):  # taken over meanwhile: nothing of ours to free
            await self.table.delete(
                record.key(),
                condition=all_of(
                    AttrEquals("holder", record.holder), AttrEquals("state", "running")
                ),
            )
