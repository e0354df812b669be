"""`agent-memory reembed`: gives every searchable item a vector of the configured model.

It re-embeds what another model (or none) embedded, and makes the searchable copies of
messages stored before messages were searchable. Safe while serving: every write goes
through the engine's change log (running replicas pick the new vectors up), updates only
items that still exist, and never copies a message that was deleted meanwhile. Resumable:
what already carries the model's vector is skipped, so a second run continues the first.
"""

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from api.conversations.messages import repository as messages
from api.conversations.messages import service as message_service
from api.conversations.messages.models import Message
from api.repositories import Repositories
from api.search import vectors
from api.search.engine import SearchEngine
from api.store import keys
from api.store.table import (
    PK,
    SK,
    Check,
    Item,
    ItemExists,
    ItemTooLarge,
    Key,
    TransactionCancelled,
    TxOp,
    Update,
)

BATCH = 32  # three operations each, and the change's two: within one transaction
BATCH_BYTES = 3_000_000  # DynamoDB refuses a transaction of more than 4 MB
ITEM_OVERHEAD_BYTES = 2_000  # keys, a vector (up to 3 KB at 1536 dimensions), attributes


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


async def _agents(
    repos: Repositories, engine: SearchEngine, only: str | None
) -> AsyncIterator[tuple[str, str]]:
    """(owner email, agent id) of every agent, or of the one named."""
    async for agent in repos.agents.every_agent():
        if only is None or agent.agent_id == only:
            yield agent.created_by, agent.agent_id


async def _unsearchable_messages(
    repos: Repositories, engine: SearchEngine, owner: str, agent_id: str, copied: set[str]
) -> list[Message]:
    """Messages of the agent's conversations (its owner's: the index groups by agent id
    only) with text but no searchable copy."""
    found: list[Message] = []
    cursor: str | None = None
    while True:
        page, cursor = await repos.conversations.list_for_agent(agent_id, limit=100, cursor=cursor)
        for conversation in page:
            if conversation.created_by != owner:
                continue
            after: str | None = None
            while True:
                batch, after = await repos.messages.oldest_first(
                    conversation.conversation_id, limit=500, cursor=after
                )
                found += [
                    m for m in batch if message_service.searchable(m) and m.message_id not in copied
                ]
                if after is None:
                    break
        if cursor is None:
            return found


async def _work_of(
    repos: Repositories, engine: SearchEngine, owner: str, agent_id: str
) -> list[_Work]:
    items = [item async for page in repos.search.searchable(agent_id) for item in page]
    stale = [
        _Work(text=item["content"], item=item)
        for item in items
        if item.get(vectors.EMBEDDING_MODEL) != engine.model_id
    ]
    copied = {item["message_id"] for item in items if item[keys.ENTITY] == keys.MESSAGE_RECALL}
    missing = await _unsearchable_messages(repos, engine, owner, agent_id, copied)
    return stale + [_Work(text=m.content, message=m) for m in missing]


def _write(
    owner: str, agent_id: str, work: _Work, vector: vectors.Vector | None, model: str | None
) -> tuple[list[TxOp], Item]:
    attributes = vectors.attributes(vector, model)
    if work.item is not None:
        key = Key(work.item[PK], work.item[SK])
        return [Update(key, set=attributes, condition=ItemExists())], {**work.item, **attributes}
    message = work.message
    assert message is not None
    item = message_service.copy_item(agent_id, message, attributes)
    return messages.copy_ops(owner, message, item), item


def _batches(work: Sequence[_Work], size: int) -> Iterator[Sequence[_Work]]:
    """At most `size` items and about BATCH_BYTES of text a batch (DynamoDB refuses a
    transaction over 4 MB)."""
    batch: list[_Work] = []
    weight = 0
    for item in work:
        cost = len(item.text.encode()) * 2 + ITEM_OVERHEAD_BYTES  # text in the item and copy
        if batch and (len(batch) == size or weight + cost > BATCH_BYTES):
            yield batch
            batch, weight = [], 0
        batch.append(item)
        weight += cost
    if batch:
        yield batch


async def _commit(
    engine: SearchEngine, owner: str, agent_id: str, batch: Sequence[_Work], tally: Tally
) -> None:
    embedded = await engine.vectors([w.text for w in batch], background=True)
    writes = [
        _write(owner, agent_id, w, v, engine.model_id) for w, v in zip(batch, embedded, strict=True)
    ]
    try:
        await engine.commit(agent_id, _once(writes), upserts=[i for _, i in writes])
    except (TransactionCancelled, ItemTooLarge):
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


def _once(writes: Sequence[tuple[list[TxOp], Item]]) -> list[TxOp]:
    """The writes' operations in one transaction, which may touch an item only once: the
    messages of one conversation check it once."""
    ops: list[TxOp] = []
    checked: set[Key] = set()
    for write, _ in writes:
        for op in write:
            if isinstance(op, Check):
                if op.key in checked:
                    continue
                checked.add(op.key)
            ops.append(op)
    return ops


def _count(work: _Work, tally: Tally) -> None:
    if work.item is not None:
        tally.embedded += 1
    else:
        tally.copied += 1


async def reembed(
    repos: Repositories,
    engine: SearchEngine,
    progress: Progress,
    *,
    agent_id: str | None = None,
    batch: int = BATCH,
) -> Tally:
    """Every agent's searchable items (or one agent's) under the engine's model."""
    tally = Tally()
    size = max(1, min(batch, BATCH))
    async for owner, agent in _agents(repos, engine, agent_id):
        tally.agents += 1
        work = await _work_of(repos, engine, owner, agent)
        progress.found(len(work))
        for chunk in _batches(work, size):
            await _commit(engine, owner, agent, chunk, tally)
            progress.done(len(chunk))
    return tally
