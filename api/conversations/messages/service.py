"""Storing a message: the message in its conversation and, when it has text a person would
search for, its searchable copy (with its vector) in the agent's partition. `record` writes
both in one transaction; `store`, for a turn, writes the message and then its copy;
`store_answer`, for a turn's answer, both in one transaction when its vector comes at once."""

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from api.agents import repository as agent_items
from api.conversations import repository as conversations
from api.conversations.messages import repository
from api.conversations.messages.models import SAID_ROLES, Message, MessageRecall
from api.errors import AppError
from api.kit.json_data import plain
from api.repositories import Repositories
from api.search import vectors
from api.search.documents import Doc
from api.search.engine import SearchEngine
from api.search.index import Filters, Hit, Mode
from api.search.vectors import Vector
from api.store.table import ConditionFailed, Item, TransactionCancelled, TxOp


def searchable(message: Message) -> bool:
    """User, assistant and system text; tool plumbing (calls, results) is not searched."""
    return message.role in SAID_ROLES and bool(message.content.strip())


def copy_item(agent_id: str, message: Message, vector_attributes: Item) -> Item:
    """A message's searchable copy, carrying these vector attributes."""
    recall = MessageRecall(
        agent_id=agent_id,
        conversation_id=message.conversation_id,
        message_id=message.message_id,
        role=message.role,
        content=message.content,
        actor_id=message.actor_id,
        interrupted=message.interrupted,
        metadata=message.metadata,
        created_at=message.created_at,
        ttl=message.ttl,
    )
    return {**recall.to_dynamo_item(), **vector_attributes}


DAY_SECONDS = 86_400


def expires_at(created_at: datetime, expiry_days: int) -> int | None:
    """A message's `ttl` under its agent's event expiry (0 days: kept)."""
    return int(created_at.timestamp()) + expiry_days * DAY_SECONDS if expiry_days else None


async def newest(repos: Repositories, agent_id: str, *, limit: int) -> list[MessageRecall]:
    """An agent's latest messages across all its conversations, newest first: those search
    finds (user, assistant and system text), as their searchable copies hold them."""
    return [
        MessageRecall.from_dynamo_item(item)
        for item in await repos.messages.newest_copies(agent_id, limit=limit)
    ]


async def record(
    repos: Repositories, search: SearchEngine, owner: str, agent_id: str, message: Message
) -> None:
    """The message and its searchable copy in one transaction, in an open conversation of
    `owner`'s: searchable on every replica once this returns."""
    if not searchable(message):
        await repos.messages.add(message)
        return
    recall = copy_item(agent_id, message, await vector_of(search, message))
    await repository.add_searchable(search, owner, agent_id, message, recall)


async def store(
    repos: Repositories,
    search: SearchEngine,
    owner: str,
    agent_id: str,
    message: Message,
    *,
    written_with: Sequence[TxOp] = (),
) -> "asyncio.Task[None] | None":
    """The message, stored when this returns (with `written_with`, other writes made in
    the same transaction: a turn's run opened with its first message); its searchable copy
    written right after, in the background (the task returned), so that a turn waits for
    one write before its first words. A message whose copy never got written (the process
    died in between) is made searchable by `agent-memory reembed`."""
    await repos.messages.add(message, written_with=written_with)
    if not searchable(message):
        return None
    return search.in_background(write_copy(search, owner, agent_id, message))


# How long a turn's answer waits for its vector, to be written with its searchable copy in
# one transaction; past that (a remote embedder, a busy one) the answer is written alone
# and its copy after it, as any message is, so that a slow embedder does not hold up the
# answer's `message` event. What a crash may lose does not grow either way: no text comes
# after the answer ends, and the run journal saved its draft at most FLUSH_SECONDS before.
ANSWER_WAITS_FOR_VECTOR_SECONDS = 0.05


async def store_answer(
    repos: Repositories, search: SearchEngine, owner: str, agent_id: str, message: Message
) -> "asyncio.Task[None] | None":
    """A turn's answer, as `store` does; but nothing waits for it except the turn's end,
    which waits for its searchable copy anyway: so, when its vector comes at once, the
    answer and its copy are one transaction, not two writes."""
    if not searchable(message):
        return await store(repos, search, owner, agent_id, message)
    vector = asyncio.ensure_future(vector_of(search, message))
    try:
        await asyncio.wait({vector}, timeout=ANSWER_WAITS_FOR_VECTOR_SECONDS)
        if not vector.done() or vector.exception() is not None:
            await repos.messages.add(message)
            return search.in_background(write_copy(search, owner, agent_id, message, vector))
    except BaseException:
        _drop(vector)  # nothing will ever await it
        raise
    recall = copy_item(agent_id, message, vector.result())
    try:
        await repository.add_searchable(search, owner, agent_id, message, recall)
    except TransactionCancelled as e:
        if e.refused(repository.MESSAGE):  # stored already (a replay), as `store` refuses it
            raise ConditionFailed("The item is not in the state the write expected.") from e
        if not e.refused(conversations.OPEN):
            raise
        # Its conversation is closing: the answer is kept as `store` keeps it, without a
        # copy.
        await repos.messages.add(message)
    return None


def _drop(future: "asyncio.Future[Any]") -> None:
    """Cancelled, and what it ends with retrieved (it may have failed already, or fail
    before the cancellation reaches it): not reported as an error nobody saw."""
    future.cancel()
    future.add_done_callback(lambda done: done.cancelled() or done.exception())


async def write_copy(
    search: SearchEngine,
    owner: str,
    agent_id: str,
    message: Message,
    vector: "Awaitable[Item] | None" = None,
) -> None:
    """The searchable copy of a stored message. `vector`: its vector attributes, being
    made already."""
    attributes = await (vector if vector is not None else vector_of(search, message))
    recall = copy_item(agent_id, message, attributes)
    await repository.add_copy(search, owner, agent_id, message, recall)


async def vector_of(search: SearchEngine, message: Message) -> Item:
    """The vector attributes of a message's searchable copy: made in the background, as
    nobody waits on it (a turn's answer waits ANSWER_WAITS_FOR_VECTOR_SECONDS at most)."""
    (vector,) = await search.vectors([message.content], background=True)
    return vectors.attributes(vector, search.model_id)


@dataclass(frozen=True)
class Turn:
    """A message beside a match, shown for context: not a match itself."""

    message_id: str
    role: str
    content: str
    created_at: datetime

    @classmethod
    def of(cls, doc: Doc | None) -> "Turn | None":
        if doc is None:
            return None
        return cls(
            doc.item_id, doc.role or "", doc.text, datetime.fromtimestamp(doc.created_at, UTC)
        )


@dataclass(frozen=True)
class MessageHit:
    conversation_id: str
    message_id: str
    role: str
    content: str
    actor_id: str | None
    interrupted: bool
    created_at: datetime
    score: float
    similarity: float | None
    metadata: dict[str, Any] | None = None  # only when the search asked for it
    before: Turn | None = None  # the turns around it in its conversation, as context
    after: Turn | None = None


@dataclass(frozen=True)
class MessageSearch:
    total: int
    mode: Mode
    hits: list[MessageHit]


def _hit(hit: Hit, with_metadata: bool) -> MessageHit:
    doc = hit.doc
    return MessageHit(
        conversation_id=doc.conversation_id or "",
        message_id=doc.item_id,
        role=doc.role or "",
        content=doc.text,
        actor_id=doc.actor_id,
        interrupted=doc.interrupted,
        created_at=datetime.fromtimestamp(doc.created_at, UTC),
        score=hit.score,
        similarity=hit.similarity,
        # The index keeps it with the text: no read of the hits again (0.3 ms of /context).
        metadata=plain(doc.metadata) if with_metadata else None,
        before=Turn.of(hit.before),
        after=Turn.of(hit.after),
    )


class InvalidTimeRange(AppError):
    status_code = 400
    code = "invalid_time_range"


def _utc(moment: datetime | None) -> datetime | None:
    """A time without a zone is read as UTC (the server's own zone means nothing to a
    client)."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


async def search(
    repos: Repositories,
    search: SearchEngine,
    owner: str,
    agent_id: str,
    query: str,
    *,
    mode: Mode | None = None,
    limit: int = 10,
    offset: int = 0,
    roles: frozenset[str] | None = None,
    actor_id: str | None = None,
    session_id: str | None = None,
    conversation_id: str | None = None,
    after: datetime | None = None,
    before: datetime | None = None,
    with_metadata: bool = False,
    min_similarity: float | None = None,
    as_of: datetime | None = None,
) -> MessageSearch:
    """An agent of `owner`'s messages across all its conversations (or one, named by its
    id or by a session id as `POST /chat` names it), best first. A session that does not
    exist finds nothing. `with_metadata`: each hit also carries the metadata its client
    stored with it (kept in the index with the text). `min_similarity`: the least cosine
    a semantic match needs (None: the model's floor). `as_of`: as the search would have
    answered then (messages said by that moment)."""
    chosen = search.mode_for(mode)
    after, before = _utc(after), _utc(before)
    if after is not None and before is not None and after >= before:
        raise InvalidTimeRange("`after` must be earlier than `before`.")
    if session_id is not None:
        found = await repos.conversations.session(owner, agent_id, session_id)
        if found is None or conversation_id not in (None, found.conversation_id):
            return MessageSearch(0, chosen, [])
        conversation_id = found.conversation_id
    result = await search.search(
        agent_id,
        query,
        mode=chosen,
        filters=Filters(
            kinds=frozenset({"message"}),
            roles=roles,
            actor_id=actor_id,
            conversation_id=conversation_id,
            after=after.timestamp() if after else None,
            before=before.timestamp() if before else None,
            as_of=as_of.timestamp() if as_of else None,
        ),
        offset=offset,
        limit=limit,
        min_similarity=min_similarity,
    )
    hits = [_hit(h, with_metadata) for h in result.hits]
    return MessageSearch(result.total, result.mode, hits)


def recorded_ops(
    search: SearchEngine,
    owner: str,
    agent_id: str,
    messages: Sequence[Message],
    vectors_by_text: Mapping[str, Vector | None],
    *,
    activity: bool = True,
) -> tuple[list[TxOp], list[Item]]:
    """What `record` writes, for many messages of one open conversation of `owner`'s and
    inside a larger transaction (seed 004's add): the writes (the messages, labelled
    `repository.MESSAGE`, and the conversation's check, `conversations.OPEN`: refused while
    it is being deleted) and the searchable copies for the search engine's change.
    `vectors_by_text`: each text's vector.

    With `activity`, the latest message's time becomes the conversation's last activity
    (the write that stands for its check) and the agent's last use (refused, `agents.USED`,
    once the agent is deleted): messages a client stores are a conversation going on, as a
    turn's are. An import's are not: they keep the times its file gives."""
    recalls = [
        copy_item(agent_id, m, vectors.attributes(vectors_by_text.get(m.content), search.model_id))
        for m in messages
        if searchable(m)
    ]
    if not activity:
        return repository.recorded_ops(owner, messages, recalls), recalls
    ops = repository.recorded_ops(owner, messages, recalls, agent_id=agent_id)
    if messages:
        ops.append(agent_items.used_op(owner, agent_id, max(m.created_at for m in messages)))
    return ops, recalls
