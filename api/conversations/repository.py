"""Conversations and their messages in the table."""

import contextlib
import math

from api.conversations.models import Conversation, SessionLookup
from api.store import keys, leases
from api.store.pages import query_all
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
)

DELETING = "deleting"  # set on a conversation whose deletion has begun


async def _keys_of(
    table: Table, pk: str, sk: SkCondition, *, index: str | None = None
) -> list[Key]:
    items = await query_all(table, pk, sk=sk, index=index, limit=500)
    return [Key(item["pk"], item["sk"]) for item in items]


async def delete_for_agent(table: Table, email: str, agent_id: str) -> int:
    """Every conversation of an agent, its messages and its session lookups; how many
    conversations there were."""
    found = await _keys_of(table, *keys.conversations_of_agent(agent_id), index=keys.GSI1)
    # The index groups by agent id only: keep what lives in this owner's partition.
    conversations = [k for k in found if k.pk == keys.conversations_partition(email)]
    doomed = list(conversations)
    for conversation in conversations:
        conversation_id = keys.conversation_id_of(conversation.sk)
        doomed += await _keys_of(table, *keys.messages_of(conversation_id))
    doomed += await _keys_of(table, *keys.session_lookups_of(email, agent_id))
    await table.batch_write(deletes=doomed)
    return len(conversations)


async def create_for_session(
    table: Table, conversation: Conversation, lookup: SessionLookup
) -> None:
    """The conversation and the session id leading to it, both or neither: TransactionCancelled
    when the session id is taken (someone opened the session first)."""
    await table.transact_write(
        [
            Put(lookup.to_dynamo_item(), condition=ItemAbsent()),
            Put(conversation.to_dynamo_item(), condition=ItemAbsent()),
        ]
    )


async def create(table: Table, conversation: Conversation) -> bool:
    """A conversation no session id leads to; False when it exists already."""
    try:
        await table.put(conversation.to_dynamo_item(), condition=ItemAbsent())
    except ConditionFailed:
        return False
    return True


async def session(table: Table, email: str, agent_id: str, session_id: str) -> SessionLookup | None:
    item = await table.get(keys.session_lookup(email, agent_id, session_id))
    return SessionLookup.from_dynamo_item(item) if item else None


async def get(table: Table, email: str, conversation_id: str) -> Conversation | None:
    item = await table.get(keys.conversation(email, conversation_id))
    return Conversation.from_dynamo_item(item) if item else None


async def list_for_agent(
    table: Table, agent_id: str, *, limit: int, cursor: str | None
) -> tuple[list[Conversation], str | None]:
    """An agent's conversations, newest first (the agent's owner was checked by the caller:
    agents belong to one user, so all of them are the caller's)."""
    pk, sk = keys.conversations_of_agent(agent_id)
    page = await table.query(pk, sk=sk, index=keys.GSI1, forward=False, limit=limit, cursor=cursor)
    return [Conversation.from_dynamo_item(i) for i in page.items], page.cursor


async def rename(table: Table, conversation: Conversation) -> None:
    await table.update(
        conversation.key(),
        set={"title": conversation.title, "updated_at": conversation.updated_at.isoformat()},
        condition=ItemExists(),
    )


# The label of `still_open`'s check, for reading its refusal.
OPEN = "conversation_open"


def still_open(email: str, conversation_id: str) -> Check:
    """A transaction's check that the conversation exists and is not being deleted: what a
    searchable copy of one of its messages is written with, so that none outlives it."""
    return Check(
        keys.conversation(email, conversation_id),
        AllOf((ItemExists(), AttrAbsent(DELETING))),
        label=OPEN,
    )


async def mark_deleting(table: Table, conversation: Conversation) -> None:
    """From now on no searchable copy of its messages is written (see `still_open`)."""
    with contextlib.suppress(ConditionFailed):  # already gone
        await table.update(conversation.key(), set={DELETING: True}, condition=ItemExists())


async def message_keys(table: Table, conversation_id: str) -> list[Key]:
    return await _keys_of(table, *keys.messages_of(conversation_id))


async def delete(table: Table, conversation: Conversation, messages: list[Key]) -> None:
    """The conversation, these messages of it, and the session ids that lead to it."""
    doomed = [conversation.key(), *messages]
    lookups_pk, lookups_sk = keys.session_lookups_of(conversation.created_by, conversation.agent_id)
    page = await table.query(lookups_pk, sk=lookups_sk)
    doomed += [
        Key(i["pk"], i["sk"])
        for i in page.items
        if i.get("conversation_id") == conversation.conversation_id
    ]
    await table.batch_write(deletes=doomed)


async def take_lease(table: Table, conversation_id: str, holder: str, until: float) -> bool:
    """The conversation's lease for `holder` until `until`, if nobody holds it."""
    item = {
        **keys.conversation_lease(conversation_id).as_item(),
        keys.ENTITY: keys.CONVERSATION_LEASE,
        "holder": holder,
        "ttl": math.ceil(until),
    }
    return await leases.take(table, item)


async def lease_until(table: Table, conversation_id: str) -> float | None:
    item = await table.get(keys.conversation_lease(conversation_id))
    return float(item["ttl"]) if item else None


async def lease_holder(table: Table, conversation_id: str) -> str | None:
    """Who holds the conversation's lease (None: nobody, or a holder whose time is past)."""
    item = await table.get(keys.conversation_lease(conversation_id))
    return str(item["holder"]) if item else None


async def renew_lease(table: Table, conversation_id: str, holder: str, until: float) -> bool:
    return await leases.renew(table, keys.conversation_lease(conversation_id), holder, until)


async def release_lease(table: Table, conversation_id: str, holder: str) -> None:
    await leases.release(table, keys.conversation_lease(conversation_id), holder)


LEASE = "lease"  # the label of the lease's release in a transaction


def release_lease_op(conversation_id: str, holder: str) -> Delete:
    return leases.release_op(keys.conversation_lease(conversation_id), holder, LEASE)
