"""Messages in the table: written one at a time as a turn produces them, read in order or
newest first."""

from collections.abc import Sequence

from api.conversations import repository as conversations
from api.conversations.messages.models import Message, Said
from api.search.engine import SearchEngine
from api.store import keys
from api.store.table import (
    SK,
    AttrEquals,
    Check,
    Item,
    ItemAbsent,
    ItemExists,
    Key,
    Put,
    Table,
    TransactionCancelled,
    TxOp,
    any_of,
)

# A message is written once (its id is new, so this only guards a replay), except over a
# draft of itself: the answer as it stood while it streamed.
DRAFT = "draft"
_NEW_OR_DRAFT = any_of(ItemAbsent(), AttrEquals(DRAFT, True))
# The label of a message's write (or check) in a transaction, for reading its refusal.
MESSAGE = "message"


def put_op(message: Message) -> Put:
    """The message's write, for a transaction (refused, MESSAGE, when it is stored already)."""
    return Put(message.to_dynamo_item(), condition=_NEW_OR_DRAFT, label=MESSAGE)


def draft_put(draft: Message) -> Put:
    """The write that saves what an answer has so far, marked interrupted until the answer
    itself (or what was kept of it when it was cut short) replaces it; its condition refuses
    it after that. If the process dies, the conversation keeps what the client saw, marked
    as cut off. For the caller to make with its other writes (the run journal's events)."""
    item = {**draft.model_copy(update={"interrupted": True}).to_dynamo_item(), DRAFT: True}
    return Put(item, condition=_NEW_OR_DRAFT)


# What writes a searchable copy goes through the search engine's change log, so it takes
# the engine rather than the repository (the engine's own repository writes the table).
async def add_searchable(
    search: SearchEngine, owner: str, agent_id: str, message: Message, recall: Item
) -> None:
    """The message and its searchable copy (`recall`, in the agent's partition), together,
    while the conversation is open (TransactionCancelled otherwise: refused, MESSAGE when the
    message is stored already, `conversations.OPEN` when the conversation is closing)."""
    await search.commit(
        agent_id,
        [
            Put(message.to_dynamo_item(), condition=_NEW_OR_DRAFT, label=MESSAGE),
            conversations.still_open(owner, message.conversation_id),
            Put(recall),
        ],
        upserts=[recall],
    )


def copy_ops(owner: str, message: Message, recall: Item) -> list[TxOp]:
    """Writes the searchable copy of a stored message while the message exists and its
    conversation is open, so that no copy outlives either."""
    return [
        Check(message.key(), ItemExists(), label=MESSAGE),
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
        if not (e.refused(MESSAGE) or e.refused(conversations.OPEN)):
            raise


async def delete_copies(search: SearchEngine, agent_id: str, message_keys: list[Key]) -> None:
    """The searchable copies of these messages, through the change log."""
    await search.remove(agent_id, [keys.message_recall_of(agent_id, k) for k in message_keys])


class MessageRepository:
    """A conversation's messages, read in order or newest first, and the searchable copies
    of an agent's messages."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def add(self, message: Message, *, written_with: Sequence[TxOp] = ()) -> None:
        """`written_with`: other writes, made in the same transaction."""
        if written_with:
            await self.table.transact_write([put_op(message), *written_with])
            return
        await self.table.put(message.to_dynamo_item(), condition=_NEW_OR_DRAFT)

    async def oldest_first(
        self, conversation_id: str, *, limit: int, cursor: str | None
    ) -> tuple[list[Message], str | None]:
        pk, sk = keys.messages_of(conversation_id)
        page = await self.table.query(pk, sk=sk, limit=limit, cursor=cursor)
        return [Message.from_dynamo_item(i) for i in page.items], page.cursor

    async def newest_first(
        self, conversation_id: str, *, limit: int, cursor: str | None
    ) -> tuple[list[Message], str | None]:
        """The latest page first, then earlier ones: how a chat shows a long conversation."""
        pk, sk = keys.messages_of(conversation_id)
        page = await self.table.query(pk, sk=sk, forward=False, limit=limit, cursor=cursor)
        return [Message.from_dynamo_item(i) for i in page.items], page.cursor

    async def newest_said(
        self, conversation_id: str, *, limit: int, cursor: str | None
    ) -> tuple[list[Said], str | None]:
        """Newest first, only who said what: read on every turn, so not validated as whole
        messages (the items were written by `add`)."""
        pk, sk = keys.messages_of(conversation_id)
        page = await self.table.query(pk, sk=sk, forward=False, limit=limit, cursor=cursor)
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

    async def of_conversation(self, conversation_id: str, sks: Sequence[str]) -> list[Message]:
        """These messages of the conversation (by sort key), in the order given; one batch
        read. A message no longer stored is left out."""
        partition = keys.messages_partition(conversation_id)
        found = await self.table.batch_get([Key(partition, sk) for sk in sks])
        by_sk = {item[SK]: Message.from_dynamo_item(item) for item in found}
        return [by_sk[sk] for sk in sks if sk in by_sk]

    async def stored(self, message_keys: Sequence[Key]) -> set[Key]:
        """Which of these messages exist: one batch read."""
        found = await self.table.batch_get(list(message_keys))
        return {Key(item["pk"], item[SK]) for item in found}

    async def newest_copies(self, agent_id: str, *, limit: int) -> list[Item]:
        """The searchable copies of an agent's messages (user, assistant and system text, from
        all its conversations), newest first: one query of the agent's partition."""
        pk, sk = keys.message_recalls_of(agent_id)
        found: list[Item] = []
        cursor: str | None = None
        while len(found) < limit:
            page = await self.table.query(
                pk, sk=sk, forward=False, limit=limit - len(found), cursor=cursor
            )
            found += page.items
            if page.cursor is None:
                break
            cursor = page.cursor
        return found


def recorded_ops(
    owner: str,
    messages: Sequence[Message],
    recalls: Sequence[Item],
    *,
    agent_id: str | None = None,
) -> list[TxOp]:
    """The writes that store messages of one conversation with their searchable copies, all
    in one transaction: the messages (labelled MESSAGE), the check that the conversation is
    open (`conversations.OPEN`), the copies. Given its `agent_id`, the check is the write
    of the conversation's last activity, the latest message's time, made while it is open
    (`conversations.active_op`, labelled the same)."""
    if not messages:
        return []
    conversation_id = messages[0].conversation_id
    if any(m.conversation_id != conversation_id for m in messages):
        raise ValueError("Messages recorded together belong to one conversation.")
    opened: TxOp = (
        conversations.still_open(owner, conversation_id)
        if agent_id is None
        else conversations.active_op(
            owner, agent_id, conversation_id, max(m.created_at for m in messages)
        )
    )
    return [
        *(Put(m.to_dynamo_item(), condition=_NEW_OR_DRAFT, label=MESSAGE) for m in messages),
        opened,
        *(Put(recall) for recall in recalls),
    ]
