"""`agent-memory reembed`: gives every searchable item a vector of the configured model.

It re-embeds what another model (or none) embedded, and makes the searchable copies of
messages stored before messages were searchable. Safe while serving: every write goes
through the engine's change log (running replicas pick the new vectors up), updates only
items that still exist, and never copies a message that was deleted meanwhile. Resumable:
what already carries the model's vector is skipped, so a second run continues the first.
"""

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from api.conversations import repository as conversations
from api.messages import repository as messages
from api.messages import service as message_service
from api.messages.models import Message
from api.search import repository, vectors
from api.search.documents import MessageRecall
from api.search.engine import SearchEngine
from api.store import keys
from api.store.table import (
    PK,
    SK,
    Check,
    Item,
    ItemAbsent,
    ItemExists,
    Key,
    Put,
    TransactionCancelled,
    TxOp,
    Update,
)

BATCH = 40  # two operations each, and the change's two: within one transaction


class Progress(Protocol):
    def found(self, count: int) -> None:
        """`count` more items need work."""

    def done(self, count: int) -> None: ...


@dataclass
class Tally:
    agents: int = 0
    embedded: int = 0  # items given a vector of the model
    copied: int = 0  # messages made searchable
    skipped: int = 0  # deleted (or changed) while this ran


@dataclass(frozen=True)
class _Work:
    """One item to (re)embed: an existing item to update, or a message's copy to create."""

    text: str
    item: Item | None = None
    message: Message | None = None


async def agents(engine: SearchEngine, only: str | None = None) -> AsyncIterator[tuple[str, str]]:
    """(owner email, agent id) of every agent, or of the one named."""
    cursor: str | None = None
    while True:
        page = await engine.table.scan(entity=keys.AGENT, limit=500, cursor=cursor)
        for item in page.items:
            if only is None or item["agent_id"] == only:
                yield item["created_by"], item["agent_id"]
        cursor = page.cursor
        if cursor is None:
            return


async def _unsearchable_messages(
    engine: SearchEngine, agent_id: str, copied: set[str]
) -> list[Message]:
    """Messages of the agent's conversations with text but no searchable copy."""
    found: list[Message] = []
    cursor: str | None = None
    while True:
        page, cursor = await conversations.list_for_agent(
            engine.table, agent_id, limit=100, cursor=cursor
        )
        for conversation in page:
            after: str | None = None
            while True:
                batch, after = await messages.oldest_first(
                    engine.table, conversation.conversation_id, limit=500, cursor=after
                )
                found += [
                    m for m in batch if message_service.searchable(m) and m.message_id not in copied
                ]
                if after is None:
                    break
        if cursor is None:
            return found


async def _work_of(engine: SearchEngine, agent_id: str) -> list[_Work]:
    items = [item async for page in repository.searchable(engine.table, agent_id) for item in page]
    stale = [
        _Work(text=item["content"], item=item)
        for item in items
        if item.get(vectors.EMBEDDING_MODEL) != engine.model_id
    ]
    copied = {item["message_id"] for item in items if item[keys.ENTITY] == keys.MESSAGE_RECALL}
    missing = await _unsearchable_messages(engine, agent_id, copied)
    return stale + [_Work(text=m.content, message=m) for m in missing]


def _write(
    agent_id: str, work: _Work, vector: vectors.Vector | None, model: str | None
) -> tuple[list[TxOp], Item]:
    attributes = vectors.attributes(vector, model)
    if work.item is not None:
        key = Key(work.item[PK], work.item[SK])
        return [Update(key, set=attributes, condition=ItemExists())], {**work.item, **attributes}
    message = work.message
    assert message is not None
    recall = MessageRecall(
        agent_id=agent_id,
        conversation_id=message.conversation_id,
        message_id=message.message_id,
        role=message.role,
        content=message.content,
        actor_id=message.actor_id,
        interrupted=message.interrupted,
        created_at=message.created_at,
        ttl=message.ttl,
    )
    item = {**recall.to_dynamo_item(), **attributes}
    return [Check(message.key(), ItemExists()), Put(item, condition=ItemAbsent())], item


async def _commit(
    engine: SearchEngine, agent_id: str, batch: Sequence[_Work], tally: Tally
) -> None:
    embedded = await engine.vectors([w.text for w in batch])
    writes = [_write(agent_id, w, v, engine.model_id) for w, v in zip(batch, embedded, strict=True)]
    try:
        await engine.commit(
            agent_id, [op for ops, _ in writes for op in ops], upserts=[i for _, i in writes]
        )
    except TransactionCancelled:
        # Something in the batch was deleted (or copied) meanwhile: one at a time, then.
        for work, (ops, item) in zip(batch, writes, strict=True):
            try:
                await engine.commit(agent_id, ops, upserts=[item])
            except TransactionCancelled:
                tally.skipped += 1
                continue
            _count(work, tally)
        return
    for work in batch:
        _count(work, tally)


def _count(work: _Work, tally: Tally) -> None:
    if work.item is not None:
        tally.embedded += 1
    else:
        tally.copied += 1


async def reembed(
    engine: SearchEngine, progress: Progress, *, agent_id: str | None = None, batch: int = BATCH
) -> Tally:
    """Every agent's searchable items (or one agent's) under the engine's model."""
    tally = Tally()
    size = max(1, min(batch, BATCH))
    async for _, agent in agents(engine, agent_id):
        tally.agents += 1
        work = await _work_of(engine, agent)
        progress.found(len(work))
        for start in range(0, len(work), size):
            chunk = work[start : start + size]
            await _commit(engine, agent, chunk, tally)
            progress.done(len(chunk))
    return tally
