"""Conversations and their messages in the table."""

import contextlib
import math
from collections.abc import AsyncIterator
from datetime import datetime

from api.conversations.models import Conversation, SessionLookup
from api.store import keys, leases
from api.store.pages import query_all, scan_pages
from api.store.table import (
    AllOf,
    AttrAbsent,
    Check,
    ConditionFailed,
    Delete,
    ItemAbsent,
    ItemExists,
    Key,
    Put,
    SkCondition,
    Table,
    Update,
)

DELETING = "deleting"  # set on a conversation whose deletion has begun


# The label of `still_open`'s check, for reading its refusal.
OPEN = "conversation_open"


_OPEN = AllOf((ItemExists(), AttrAbsent(DELETING)))
LAST_ACTIVITY = "last_activity_at"
AWAITING_USER = "awaiting_user"


def still_open(email: str, conversation_id: str) -> Check:
    """A transaction's check that the conversation exists and is not being deleted: what a
    searchable copy of one of its messages is written with, so that none outlives it."""
    return Check(keys.conversation(email, conversation_id), _OPEN, label=OPEN)


def active_op(
    email: str,
    agent_id: str,
    conversation_id: str,
    at: datetime,
    *,
    awaiting_user: bool | None = None,
) -> Update:
    """A transaction's write of the conversation's last activity, `at`: its `updated_at`,
    and its place among its agent's conversations; and, from a turn's end, whether it
    awaits the person's answer (`awaiting_user`; None leaves it). Made only while the
    conversation is open, under `still_open`'s condition and label, so that it stands in
    for that check in the same transaction (a transaction names an item once) and never
    brings back a conversation being deleted."""
    stamp = at.isoformat()
    awaiting = {} if awaiting_user is None else {AWAITING_USER: awaiting_user}
    return Update(
        keys.conversation(email, conversation_id),
        set={
            "updated_at": stamp,
            LAST_ACTIVITY: stamp,
            **keys.conversation_index(agent_id, keys.time_of(at), conversation_id),
            **awaiting,
        },
        condition=_OPEN,
        label=OPEN,
    )


class ConversationRepository:
    """Conversations, the session ids that lead to them, their messages' keys, and the
    lease that lets one turn at a time run in each."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def _keys_of(self, pk: str, sk: SkCondition, *, index: str | None = None) -> list[Key]:
        items = await query_all(self.table, pk, sk=sk, index=index, limit=500)
        return [Key(item["pk"], item["sk"]) for item in items]

    async def delete_for_agent(self, email: str, agent_id: str) -> int:
        """Every conversation of an agent, its messages and its session lookups; how many
        conversations there were."""
        found = await self._keys_of(*keys.conversations_of_agent(agent_id), index=keys.GSI1)
        # The index groups by agent id only: keep what lives in this owner's partition.
        conversations = [k for k in found if k.pk == keys.conversations_partition(email)]
        doomed = list(conversations)
        for conversation in conversations:
            conversation_id = keys.conversation_id_of(conversation.sk)
            doomed += await self._keys_of(*keys.messages_of(conversation_id))
        doomed += await self._keys_of(*keys.session_lookups_of(email, agent_id))
        await self.table.batch_write(deletes=doomed)
        return len(conversations)

    async def create_for_session(self, conversation: Conversation, lookup: SessionLookup) -> None:
        """The conversation and the session id leading to it, both or neither: TransactionCancelled
        when the session id is taken (someone opened the session first)."""
        await self.table.transact_write(
            [
                Put(lookup.to_dynamo_item(), condition=ItemAbsent()),
                Put(conversation.to_dynamo_item(), condition=ItemAbsent()),
            ]
        )

    async def create(self, conversation: Conversation) -> bool:
        """A conversation no session id leads to; False when it exists already."""
        try:
            await self.table.put(conversation.to_dynamo_item(), condition=ItemAbsent())
        except ConditionFailed:
            return False
        return True

    async def session(self, email: str, agent_id: str, session_id: str) -> SessionLookup | None:
        item = await self.table.get(keys.session_lookup(email, agent_id, session_id))
        return SessionLookup.from_dynamo_item(item) if item else None

    async def get(self, email: str, conversation_id: str) -> Conversation | None:
        item = await self.table.get(keys.conversation(email, conversation_id))
        return Conversation.from_dynamo_item(item) if item else None

    async def list_for_agent(
        self, agent_id: str, *, limit: int, cursor: str | None
    ) -> tuple[list[Conversation], str | None]:
        """An agent's conversations, the latest active first (the agent's owner was checked
        by the caller: agents belong to one user, so all of them are the caller's).

        The cursor holds the last listed conversation's place, not the conversation: one
        that moves up meanwhile (a turn ended in it) leaves the place where it was, so the
        next pages list every other conversation once and none twice; one that moved above
        the cursor is on the first page when the list is read again."""
        pk, sk = keys.conversations_of_agent(agent_id)
        page = await self.table.query(
            pk, sk=sk, index=keys.GSI1, forward=False, limit=limit, cursor=cursor
        )
        return [Conversation.from_dynamo_item(i) for i in page.items], page.cursor

    async def rename(self, conversation: Conversation) -> None:
        await self.table.update(
            conversation.key(),
            set={"title": conversation.title, "updated_at": conversation.updated_at.isoformat()},
            condition=ItemExists(),
        )

    async def mark_active(
        self,
        email: str,
        agent_id: str,
        conversation_id: str,
        at: datetime,
        *,
        awaiting_user: bool | None = None,
    ) -> bool:
        """`active_op` written on its own (a turn whose closing transaction was refused);
        False when the conversation is gone or going."""
        op = active_op(email, agent_id, conversation_id, at, awaiting_user=awaiting_user)
        try:
            await self.table.update(op.key, set=op.set, condition=op.condition)
        except ConditionFailed:
            return False
        return True

    async def of_earlier_layout(self) -> AsyncIterator[list[Conversation]]:
        """Every conversation stored before conversations kept their last activity (no
        `last_activity_at`), a page at a time: for the upgrade of the table's layout. A
        scan of the whole table."""
        async for page in scan_pages(self.table, entity=keys.CONVERSATION, limit=500):
            found = [Conversation.from_dynamo_item(item) for item in page]
            yield [c for c in found if c.last_activity_at is None]

    async def set_earlier_activity(self, conversation: Conversation, at: datetime) -> bool:
        """The last activity of a conversation of the earlier layout (`of_earlier_layout`),
        found by the upgrade, unless a turn has written one since (or the conversation is
        gone): never moves a conversation back. Its `updated_at` is the later of the two."""
        stamp = at.isoformat()
        changes = {
            LAST_ACTIVITY: stamp,
            **keys.conversation_index(
                conversation.agent_id, keys.time_of(at), conversation.conversation_id
            ),
        }
        if at > conversation.updated_at:
            changes["updated_at"] = stamp
        try:
            await self.table.update(
                conversation.key(),
                set=changes,
                condition=AllOf((ItemExists(), AttrAbsent(LAST_ACTIVITY))),
            )
        except ConditionFailed:
            return False
        return True

    async def mark_deleting(self, conversation: Conversation) -> None:
        """From now on no searchable copy of its messages is written (see `still_open`)."""
        with contextlib.suppress(ConditionFailed):  # already gone
            await self.table.update(
                conversation.key(), set={DELETING: True}, condition=ItemExists()
            )

    async def message_keys(self, conversation_id: str) -> list[Key]:
        return await self._keys_of(*keys.messages_of(conversation_id))

    async def delete(self, conversation: Conversation, messages: list[Key]) -> None:
        """The conversation, these messages of it, and the session ids that lead to it."""
        doomed = [conversation.key(), *messages]
        lookups_pk, lookups_sk = keys.session_lookups_of(
            conversation.created_by, conversation.agent_id
        )
        page = await self.table.query(lookups_pk, sk=lookups_sk)
        doomed += [
            Key(i["pk"], i["sk"])
            for i in page.items
            if i.get("conversation_id") == conversation.conversation_id
        ]
        await self.table.batch_write(deletes=doomed)

    async def take_lease(self, conversation_id: str, holder: str, until: float) -> bool:
        """The conversation's lease for `holder` until `until`, if nobody holds it."""
        item = {
            **keys.conversation_lease(conversation_id).as_item(),
            keys.ENTITY: keys.CONVERSATION_LEASE,
            "holder": holder,
            "ttl": math.ceil(until),
        }
        return await leases.take(self.table, item)

    async def lease_until(self, conversation_id: str) -> float | None:
        item = await self.table.get(keys.conversation_lease(conversation_id))
        return float(item["ttl"]) if item else None

    async def lease_holder(self, conversation_id: str) -> str | None:
        """Who holds the conversation's lease (None: nobody, or a holder whose time is past)."""
        item = await self.table.get(keys.conversation_lease(conversation_id))
        return str(item["holder"]) if item else None

    async def renew_lease(self, conversation_id: str, holder: str, until: float) -> bool:
        return await leases.renew(
            self.table, keys.conversation_lease(conversation_id), holder, until
        )

    async def release_lease(self, conversation_id: str, holder: str) -> None:
        await leases.release(self.table, keys.conversation_lease(conversation_id), holder)


LEASE = "lease"  # the label of the lease's release in a transaction


def release_lease_op(conversation_id: str, holder: str) -> Delete:
    return leases.release_op(keys.conversation_lease(conversation_id), holder, LEASE)
