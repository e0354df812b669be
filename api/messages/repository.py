"""Messages in the table: written one at a time as a turn produces them, read in order or
newest first."""

from api.conversations import repository as conversations
from api.messages.models import Message, Said
from api.search.engine import SearchEngine
from api.store import keys
from api.store.table import (
    Check,
    Item,
    ItemAbsent,
    ItemExists,
    Key,
    Put,
    Table,
    TransactionCancelled,
    TxOp,
)


async def add(table: Table, message: Message) -> None:
    # A message is written once; its id is new, so the condition only guards a replay.
    await table.put(message.to_dynamo_item(), condition=ItemAbsent())


async def add_searchable(
    search: SearchEngine, owner: str, agent_id: str, message: Message, recall: Item
) -> None:
    """The message and its searchable copy (`recall`, in the agent's partition), together,
    while the conversation is open (TransactionCancelled otherwise)."""
    await search.commit(
        agent_id,
        [
            Put(message.to_dynamo_item(), condition=ItemAbsent()),
            conversations.still_open(owner, message.conversation_id),
            Put(recall),
        ],
        upserts=[recall],
    )


async def oldest_first(
    table: Table, conversation_id: str, *, limit: int, cursor: str | None
) -> tuple[list[Message], str | None]:
    pk, sk = keys.messages_of(conversation_id)
    page = await table.query(pk, sk=sk, limit=limit, cursor=cursor)
    return [Message.from_dynamo_item(i) for i in page.items], page.cursor


async def newest_said(
    table: Table, conversation_id: str, *, limit: int, cursor: str | None
) -> tuple[list[Said], str | None]:
    """Newest first, only who said what: read on every turn, so not validated as whole
    messages (the items were written by `add`)."""
    pk, sk = keys.messages_of(conversation_id)
    page = await table.query(pk, sk=sk, forward=False, limit=limit, cursor=cursor)
    return [
        Said(
            i["message_id"],
            i["role"],
            i.get("content", ""),
            i.get("actor_id"),
            bool(i.get("interrupted", False)),
        )
        for i in page.items
    ], page.cursor


def copy_ops(owner: str, message: Message, recall: Item) -> list[TxOp]:
    """Writes the searchable copy of a stored message while the message exists and its
    conversation is open, so that no copy outlives either."""
    return [
        Check(message.key(), ItemExists()),
        conversations.still_open(owner, message.conversation_id),
        Put(recall),
    ]


async def add_copy(
    search: SearchEngine, owner: str, agent_id: str, message: Message, recall: Item
) -> None:
    """The searchable copy of a stored message; nothing when the message or its
    conversation is gone or going."""
    try:
        await search.commit(agent_id, copy_ops(owner, message, recall), upserts=[recall])
    except TransactionCancelled as e:
        if not (e.refused(0) or e.refused(1)):
            raise


async def delete_copies(search: SearchEngine, agent_id: str, message_keys: list[Key]) -> None:
    """The searchable copies of these messages, through the change log."""
    await search.remove(agent_id, [keys.message_recall_of(agent_id, k) for k in message_keys])
