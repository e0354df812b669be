"""Archival memory: unlimited, searched on demand, stored once per distinct text.

An insert writes the memory and a guard item keyed by its text's hash in one transaction,
conditioned on the guard being absent: however many callers insert the same text at once,
exactly one memory results and the others learn which one it is. Texts that differ only in
case, spacing or Unicode form (`normalized`) are the same text: the hash is of the text so
normalized. Memories stored before that rule carry the hash of their text as written and
are guarded by it (`legacy_hashes`).
"""

import contextlib
import hashlib
import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import cast

from api.kit.retry import backoff
from api.memory import repository
from api.memory.errors import (
    AlreadySuperseded,
    ArchivalMemoryNotFound,
    ContentTooLong,
    EmptyContent,
    InvalidPage,
    InvalidSupersession,
    MemoryBusy,
    RestoreConflict,
    RestoreWindowPassed,
)
from api.memory.models import ArchivalMemory, Category
from api.repositories import Repositories
from api.search import facts, vectors
from api.search.documents import Doc
from api.search.engine import SearchEngine
from api.search.index import Filters, Hit, Mode
from api.search.vectors import Vector
from api.store.table import (
    AttrEquals,
    ConditionFailed,
    InvalidCursor,
    Item,
    Put,
    TransactionCancelled,
    TxOp,
)

PAGE_SIZE = 5
MAX_CONTENT_CHARS = 50_000  # well inside an item's 400 KB, even at 4 bytes a character
INSERT_ATTEMPTS = 20  # each lost race means another insert of this text won
MAX_REPLACED = 20  # current memories of one attribute a new one replaces at most
UNDO_SECONDS = 600  # how long a deleted memory can be restored, unless the caller says


@dataclass(frozen=True)
class ArchivalInsert:
    """The memory holding the text, whether this call created it, the memories it replaced
    (as they are now: superseded by it), and those it was asked to replace that another
    write had replaced first (as they are now)."""

    memory: ArchivalMemory
    created: bool
    replaced: list[ArchivalMemory] = field(default_factory=list)
    not_replaced: list[ArchivalMemory] = field(default_factory=list)


@dataclass(frozen=True)
class Match:
    memory: ArchivalMemory
    score: float
    similarity: float | None


@dataclass(frozen=True)
class SearchPage:
    query: str
    page: int
    total: int
    matches: list[Match] = field(default_factory=list)
    page_size: int = PAGE_SIZE
    mode: Mode = "lexical"

    @property
    def memories(self) -> list[ArchivalMemory]:
        return [m.memory for m in self.matches]

    @property
    def pages(self) -> int:
        return -(-self.total // self.page_size)

    @property
    def has_next(self) -> bool:
        return self.page < self.pages

    @property
    def first_rank(self) -> int:
        """The rank of the page's first memory: numbering runs on across pages."""
        return (self.page - 1) * self.page_size + 1


@dataclass(frozen=True)
class Listing:
    """Memories newest first, how many there are in all, and whether older ones follow."""

    total: int
    memories: list[ArchivalMemory] = field(default_factory=list)
    more: bool = False

    @property
    def cursor(self) -> str | None:
        """What continues the listing (`after`): the id of its last memory, if more follow."""
        return self.memories[-1].memory_id if self.more and self.memories else None


def normalized(text: str) -> str:
    """What two texts share when they say the same thing in the same words: Unicode
    compatibility forms folded (NFKC: full-width letters, ligatures, non-breaking spaces),
    case folded, runs of whitespace (line breaks included) one space, the ends trimmed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split())


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def content_hash(content: str) -> str:
    """A memory's identity: the SHA-256 of its normalized text, which keys its guard."""
    return _sha256(normalized(content))


def legacy_hashes(content: str) -> list[str]:
    """The guards of memories stored before texts were normalized that this text
    duplicates, as far as their hashes can tell: those memories carry (and are guarded by)
    the SHA-256 of their text as written, so a text is looked for as it is written and with
    its spaces collapsed (a memory written in other case or Unicode forms is not found).
    Without its own hash, which an insert's condition covers."""
    own = content_hash(content)
    written = {_sha256(content): None, _sha256(" ".join(content.split())): None}
    return [h for h in written if h != own]


def hash_matches(content: str, digest: str) -> bool:
    """Whether `digest` is a hash this text's memory can carry: the current one, or the one
    of the text as written (memories stored, and files exported, before normalization)."""
    return digest in (content_hash(content), _sha256(content))


def _content(text: str) -> str:
    # Only the ends are trimmed: inner line breaks can be the point of a long note.
    content = text.strip()
    if not content:
        raise EmptyContent("Cannot insert empty content into archival memory (no change).")
    if len(content) > MAX_CONTENT_CHARS:
        raise ContentTooLong(
            f"Content is too long for one archival memory ({len(content)} characters; at "
            f"most {MAX_CONTENT_CHARS}). Split it into several inserts (no change)."
        )
    return content


async def insert(
    repos: Repositories,
    engine: SearchEngine,
    agent_id: str,
    content: str,
    *,
    category: Category | None = None,
    context: str | None = None,
    confidence: float | None = None,
    tags: Sequence[str] = (),
    valid_from: datetime | None = None,
    supersedes: Sequence[str] = (),
    automatic: bool = True,
) -> ArchivalInsert:
    """Stored, embedded and searchable (on every replica) when this returns. Idempotent by
    content: text already stored (the same once `normalized`: in other case, spacing or
    Unicode forms too) comes back as it was stored (its text, category, context, confidence
    and tags unchanged), unless that memory was superseded: then the text is true again and
    is stored anew.

    `valid_from`: when it became true (default: now). `supersedes`: ids of memories it
    replaces (each refused as unknown unless the agent's). With `automatic`, it also
    replaces the current memories that state the same attribute of the same subject with
    another value (`facts`). The new memory and the ends of those it replaces are written
    in one transaction; one another write replaced first is left as it is, and said."""
    text = _content(content)
    digest = content_hash(text)
    stored = await _stored_before_normalization(repos, agent_id, text)
    if stored is not None:
        return ArchivalInsert(stored, created=False)
    asked = await _targets(repos, agent_id, supersedes)
    statement = facts.statement_of(text, category) if automatic else None
    (vector,) = await engine.vectors([text])
    vector_attributes = vectors.attributes(vector, engine.model_id)
    guard_of: str | None = None  # a superseded memory of this text, whose guard moves
    for attempt in range(INSERT_ATTEMPTS):
        created_at = datetime.fromtimestamp(engine.clock.now(), UTC)
        memory = ArchivalMemory(
            agent_id=agent_id,
            memory_id=repository.new_memory_id(created_at),
            content=text,
            content_hash=digest,
            created_at=created_at,
            category=category,
            context=(context or "").strip() or None,
            confidence=confidence,
            tags=list(dict.fromkeys(tags)),
            valid_from=valid_from,
        )
        found = await _same_attribute(repos, engine, agent_id, statement, asked)
        memory, replacing, kept = _plan_replacements(memory, asked, found)
        written, item = repository.archival_insert_ops(memory, vector_attributes, guard_of=guard_of)
        ops: list[TxOp] = [*written]
        upserts = [item]
        for old in replacing.values():
            since = ArchivalMemory.from_dynamo_item(old).valid_since
            op, ended = repository.supersede_op(
                old, at=max(memory.valid_since, since), by=memory.memory_id
            )
            ops.append(op)
            upserts.append(ended)
        if memory.superseded_by is not None:  # said to hold before what holds now
            ops.append(repository.still_current(agent_id, memory.superseded_by))
        try:
            await engine.commit(agent_id, ops, upserts=upserts)
        except TransactionCancelled as e:
            if _replaced_meanwhile(e):
                asked = await _targets(repos, agent_id, supersedes)
                continue
            if not e.refused(repository.HASH_GUARD):  # a conflict, not a verdict: again
                await backoff(attempt)
                continue
        else:
            return ArchivalInsert(
                memory,
                created=True,
                replaced=[ArchivalMemory.from_dynamo_item(i) for i in upserts[1:]],
                not_replaced=kept,
            )
        guard = await repos.memory.archival_guard(agent_id, digest)
        if guard is None:  # deleted since our insert was refused: try again
            guard_of = None
            continue
        existing = await repos.memory.get_archival(agent_id, guard.memory_id)
        if existing is not None and existing.current:
            return ArchivalInsert(existing, created=False)
        if existing is not None:
            guard_of = existing.memory_id
            continue
        # A guard whose memory is gone would block this text forever: remove it, if it is
        # still that guard, and insert afresh.
        with contextlib.suppress(ConditionFailed):
            await repos.memory.delete_guard(
                agent_id, digest, condition=AttrEquals("memory_id", guard.memory_id)
            )
    raise MemoryBusy("Archival memory is being written by too many callers at once; try again.")


def _replaced_meanwhile(cancelled: TransactionCancelled) -> bool:
    """Whether a memory a write ends, or one it is said to hold before, was replaced by
    another write first."""
    return cancelled.refused(repository.SUPERSEDE) or cancelled.refused(repository.STILL_CURRENT)


async def _targets(repos: Repositories, agent_id: str, ids: Sequence[str]) -> dict[str, Item]:
    """The stored items of the memories a writer says it replaces; an id that is not one of
    the agent's memories is refused, before anything is written."""
    if not ids:
        return {}
    found = await repos.memory.archival_items(agent_id, ids)
    for memory_id in ids:
        if memory_id not in found:
            raise ArchivalMemoryNotFound(memory_id)
    return found


async def _same_attribute(
    repos: Repositories,
    engine: SearchEngine,
    agent_id: str,
    statement: facts.Statement | None,
    asked: Mapping[str, Item],
) -> dict[str, Item]:
    """The current memories that state `statement`'s attribute with another value, as
    stored (the index finds them; the table gives their items)."""
    if statement is None:
        return {}
    listed = await engine.latest(
        agent_id,
        filters=Filters(kinds=frozenset({"archival"}), attribute=statement.key),
        limit=MAX_REPLACED,
    )
    other = [
        doc.item_id
        for doc in listed.docs
        if doc.item_id not in asked
        and (said := facts.statement_of(doc.text, doc.category)) is not None
        and said.value != statement.value
    ]
    return await repos.memory.archival_items(agent_id, other) if other else {}


def _plan_replacements(
    memory: ArchivalMemory, asked: Mapping[str, Item], found: Mapping[str, Item]
) -> tuple[ArchivalMemory, dict[str, Item], list[ArchivalMemory]]:
    """The new memory (superseded at birth when it states what held before a current
    memory: "lived in Lisbon since 2019" after "Lives in: Porto" of 2024), the items it
    replaces, and the asked-for ones already replaced (kept as they are)."""
    kept = [m for m in map(ArchivalMemory.from_dynamo_item, asked.values()) if not m.current]
    replacing = {i: item for i, item in asked.items() if "superseded_by" not in item}
    newer = [
        m
        for m in map(ArchivalMemory.from_dynamo_item, found.values())
        if m.valid_since > memory.valid_since
    ]
    if newer:
        latest = min(newer, key=lambda m: m.valid_since)
        memory = memory.model_copy(
            update={"superseded_at": latest.valid_since, "superseded_by": latest.memory_id}
        )
    for memory_id, item in found.items():
        if ArchivalMemory.from_dynamo_item(item).valid_since <= memory.valid_since:
            replacing.setdefault(memory_id, item)
    return memory, replacing, kept


async def supersede(
    repos: Repositories, engine: SearchEngine, agent_id: str, memory_id: str, by: str
) -> ArchivalMemory:
    """Mark a memory as replaced by another of the agent's (`by`, current), from when `by`
    became true; the memory as it is now. Both are checked in the write itself, so of two
    writers replacing one memory at once exactly one does; the other is told by whom."""
    if memory_id == by:
        raise InvalidSupersession(f"Archival memory {memory_id} cannot replace itself (no change).")
    for attempt in range(INSERT_ATTEMPTS):
        items = await _targets(repos, agent_id, [memory_id, by])
        old, new = (ArchivalMemory.from_dynamo_item(items[i]) for i in (memory_id, by))
        if not old.current:
            raise AlreadySuperseded(memory_id, old.superseded_by)
        if not new.current:
            raise InvalidSupersession(
                f"Archival memory {by} cannot replace {memory_id}: it was itself replaced by "
                f"{new.superseded_by}; replace {memory_id} with the current one (no change)."
            )
        at = max(new.valid_since, old.valid_since)
        op, ended = repository.supersede_op(items[memory_id], at=at, by=by)
        try:
            await engine.commit(
                agent_id, [op, repository.still_current(agent_id, by)], upserts=[ended]
            )
        except TransactionCancelled as e:
            if not _replaced_meanwhile(e):
                await backoff(attempt)
            continue  # a verdict is read again, and told
        return ArchivalMemory.from_dynamo_item(ended)
    raise MemoryBusy("Archival memory is being written by too many callers at once; try again.")


async def _stored_before_normalization(
    repos: Repositories, agent_id: str, text: str
) -> ArchivalMemory | None:
    """The memory stored before texts were normalized that holds this text, if any.

    Its guard is keyed by the hash of its text as written, not by `content_hash`, so the
    insert's condition cannot see it: it is read here instead. A read suffices, with no
    condition in the insert's transaction, because no writer makes a guard of that kind any
    more (but a server of the older version still running beside this one, during an
    upgrade): one found absent stays absent. A guard whose memory is gone is removed, as
    `insert` does for its own."""
    hashes = legacy_hashes(text)
    if not hashes:
        return None
    for guard in (await repos.memory.archival_guards(agent_id, hashes)).values():
        existing = await repos.memory.get_archival(agent_id, guard.memory_id)
        if existing is not None:
            return existing
        with contextlib.suppress(ConditionFailed):
            await repos.memory.delete_guard(
                agent_id,
                guard.content_hash,
                condition=AttrEquals("memory_id", guard.memory_id),
            )
    return None


def _memory(agent_id: str, doc: Doc) -> ArchivalMemory:
    return ArchivalMemory(
        agent_id=agent_id,
        memory_id=doc.item_id,
        content=doc.text,
        content_hash=doc.content_hash or content_hash(doc.text),
        created_at=repository.created_at_of(doc.item_id)
        or datetime.fromtimestamp(doc.created_at, UTC),
        category=cast(Category | None, doc.category),
        context=doc.context,
        confidence=doc.confidence,
        tags=list(doc.tags),
        valid_from=_moment(doc.valid_from),
        superseded_at=_moment(doc.superseded_at),
        superseded_by=doc.superseded_by,
    )


def _moment(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def _match(agent_id: str, hit: Hit) -> Match:
    return Match(_memory(agent_id, hit.doc), hit.score, hit.similarity)


async def search(
    engine: SearchEngine,
    agent_id: str,
    query: str,
    *,
    page: int = 1,
    page_size: int = PAGE_SIZE,
    mode: Mode | None = None,
    tags: frozenset[str] | None = None,
    categories: frozenset[str] | None = None,
    min_similarity: float | None = None,
    as_of: datetime | None = None,
    include_history: bool = False,
) -> SearchPage:
    """One page of the matches among all the agent's memories, best first. A page past the
    end comes back empty, with the total, so the caller can say how many pages there are.
    `min_similarity`: the least cosine a semantic match needs (None: the model's floor).
    Current memories only, unless the question asks about the past ("where did I live
    before?", "in 2024") or `include_history`; with `as_of`, those true at that moment."""
    text = " ".join(query.split())
    if not text:
        raise EmptyContent("Search query is empty; give words to search for.")
    if page < 1:
        raise InvalidPage(page)
    found = await engine.search(
        agent_id,
        text,
        mode=mode,
        filters=Filters(
            kinds=frozenset({"archival"}),
            tags=tags,
            categories=categories,
            as_of=None if as_of is None else as_of.timestamp(),
            history=include_history,
        ),
        offset=(page - 1) * page_size,
        limit=page_size,
        min_similarity=min_similarity,
    )
    return SearchPage(
        query=text,
        page=page,
        total=found.total,
        matches=[_match(agent_id, hit) for hit in found.hits],
        page_size=page_size,
        mode=found.mode,
    )


async def list_memories(
    repos: Repositories, agent_id: str, *, limit: int = 50, cursor: str | None = None
) -> tuple[list[ArchivalMemory], str | None]:
    """Newest first; the cursor continues the listing."""
    return await repos.memory.archival_page(agent_id, limit=limit, cursor=cursor)


async def newest(
    engine: SearchEngine,
    agent_id: str,
    *,
    categories: frozenset[str] | None = None,
    limit: int = 50,
    after: str | None = None,
) -> Listing:
    """The agent's memories of these categories (all of them: None), newest first, with
    their total, from the search engine's index of the agent: no read of the partition
    beyond the index's own upkeep. `after`: a memory id (a previous listing's cursor); the
    listing goes on with the memories older than it."""
    before = None
    if after is not None:
        key = repository.archival_key(agent_id, after)
        if key is None:
            raise InvalidCursor("This cursor is not one a listing of archival memories gave.")
        before = key.sk
    listed = await engine.latest(
        agent_id,
        filters=Filters(kinds=frozenset({"archival"}), categories=categories),
        before=before,
        limit=limit,
    )
    memories = [_memory(agent_id, doc) for doc in listed.docs]
    return Listing(total=listed.total, memories=memories, more=listed.more)


async def get_memory(repos: Repositories, agent_id: str, memory_id: str) -> ArchivalMemory:
    memory = await repos.memory.get_archival(agent_id, memory_id)
    if memory is None:
        raise ArchivalMemoryNotFound(memory_id)
    return memory


async def delete_memory(
    repos: Repositories,
    engine: SearchEngine,
    agent_id: str,
    memory_id: str,
    *,
    undo_seconds: int = UNDO_SECONDS,
) -> datetime:
    """The memory and its hash guard: the same text can be inserted again afterwards, and
    no search, listing or read finds it. A copy is kept `undo_seconds` for `restore_memory`;
    when it can no longer be restored."""
    items = await repos.memory.archival_items(agent_id, [memory_id])
    if memory_id not in items:
        raise ArchivalMemoryNotFound(memory_id)
    now = engine.clock.now()
    until = math.ceil(now) + undo_seconds
    await repository.delete_archival(engine, items[memory_id], deleted_at=now, until=until)
    return datetime.fromtimestamp(until, UTC)


async def restore_memory(
    repos: Repositories, engine: SearchEngine, agent_id: str, memory_id: str
) -> ArchivalMemory:
    """A memory deleted within its undo window, back exactly as it was (its id, text,
    times, tags, category, validity and vector), searchable on every replica when this
    returns. Restoring one that is back already returns it (a retry is safe). Refused when
    the window has passed (RestoreWindowPassed) or the same text was stored again meanwhile
    as another memory (RestoreConflict: that one stays, so a text is never stored twice)."""
    for attempt in range(INSERT_ATTEMPTS):
        copy = await repos.memory.deleted_archival(agent_id, memory_id)
        if copy is None:
            return await _restored_already(repos, agent_id, memory_id)
        ops, item = repository.restore_archival_ops(copy)
        memory = ArchivalMemory.from_dynamo_item(item)
        await _check_not_stored_again(repos, memory)
        try:
            await engine.commit(agent_id, ops, upserts=[item])
        except TransactionCancelled as e:
            if e.refused(repository.DELETED) or e.refused(repository.ARCHIVAL):
                return await _restored_already(repos, agent_id, memory_id)
            if e.refused(repository.HASH_GUARD):
                await _check_not_stored_again(repos, memory, hashes=[memory.content_hash])
            await backoff(attempt)
            continue
        return memory
    raise MemoryBusy("Archival memory is being written by too many callers at once; try again.")


async def _restored_already(repos: Repositories, agent_id: str, memory_id: str) -> ArchivalMemory:
    """The memory when another restore brought it back; RestoreWindowPassed otherwise."""
    memory = await repos.memory.get_archival(agent_id, memory_id)
    if memory is None:
        raise RestoreWindowPassed(memory_id)
    return memory


async def _check_not_stored_again(
    repos: Repositories, memory: ArchivalMemory, *, hashes: Sequence[str] = ()
) -> None:
    """RestoreConflict when another memory holds this text now. A memory stored before
    texts were normalized carries its legacy hash, so its text's current hash is asked too:
    a new insert of the same text is guarded by that one."""
    wanted = list(dict.fromkeys([*hashes, content_hash(memory.content)]))
    guards = await repos.memory.archival_guards(memory.agent_id, wanted)
    for guard in guards.values():
        if guard.memory_id == memory.memory_id:
            continue
        if await repos.memory.get_archival(memory.agent_id, guard.memory_id) is not None:
            raise RestoreConflict(memory.memory_id, guard.memory_id)
        # A guard whose memory is gone would refuse this restore forever, as in `insert`.
        with contextlib.suppress(ConditionFailed):
            await repos.memory.delete_guard(
                memory.agent_id,
                guard.content_hash,
                condition=AttrEquals("memory_id", guard.memory_id),
            )


@dataclass(frozen=True)
class PlannedInserts:
    """Archival inserts to write inside a larger transaction (seed 004's add: with the
    messages and the run): for each new text its hash guard then its memory, then the ends
    of the memories they replace; the items for the search engine's change (the new
    memories, then the ended ones), and the memories. Texts stored already are left out.
    `replacing`: each new memory that was asked to replace others, with those it replaces
    (as they will be) and those another write had replaced first."""

    ops: list[Put]
    items: list[Item]
    memories: list[ArchivalMemory]
    replacing: list[ArchivalInsert] = field(default_factory=list)

    def refused(self, cancelled: TransactionCancelled) -> bool:
        """Whether one of these writes was refused (by its label: no other write of the
        transaction may share one): a text was stored, or a memory replaced, meanwhile, so
        the plan must be made again."""
        return any(cancelled.refused(label) for label in {op.label for op in self.ops})


async def plan_inserts(
    repos: Repositories,
    engine: SearchEngine,
    agent_id: str,
    entries: Sequence[tuple[str, Sequence[str]]],
    vectors_by_text: Mapping[str, Vector | None],
    *,
    supersedes: Mapping[str, Sequence[str]] | None = None,
    valid_from: Mapping[str, datetime] | None = None,
) -> PlannedInserts:
    """The inserts of these (text, tags), each text once (the first of texts that are the
    same once normalized, with the tags of all of them), with the vectors given for them;
    one read finds the texts stored already (under either kind of guard: see
    `_stored_before_normalization` for why a read suffices for the older kind).

    `supersedes` and `valid_from`, by text as given: the ids of the memories a text
    replaces (each refused as unknown unless the agent's; one replaced by the first text
    naming it) and when it became true, as `insert` takes them. A text stored already is
    not stored again and replaces nothing. Never automatic: these are texts as they were
    said (seed 004's messages), not statements written to be compared."""
    replaces = supersedes or {}
    wanted: dict[str, tuple[str, str, list[str]]] = {}  # by content hash: as given, as stored
    asked_by: dict[str, list[str]] = {}  # ids to replace, by content hash
    since: dict[str, datetime] = {}
    for content, tags in entries:
        text = _content(content)
        digest = content_hash(text)
        _, _, joined = wanted.setdefault(digest, (content, text, []))
        joined += [t for t in tags if t not in joined]
        asking = asked_by.setdefault(digest, [])
        asking += [i for i in replaces.get(content, ()) if i not in asking]
        if valid_from and content in valid_from:
            since.setdefault(digest, valid_from[content])
    legacy = {digest: legacy_hashes(text) for digest, (_, text, _) in wanted.items()}
    looked_up = [*wanted, *(h for hashes in legacy.values() for h in hashes)]
    stored = await repos.memory.archival_guards(agent_id, looked_up)
    asked = await _targets(repos, agent_id, [i for ids in asked_by.values() for i in ids])
    created_at = datetime.fromtimestamp(engine.clock.now(), UTC)
    ops: list[Put] = []
    ends: list[Put] = []
    items: list[Item] = []
    ended: list[Item] = []
    memories: list[ArchivalMemory] = []
    replacing: list[ArchivalInsert] = []
    claimed: set[str] = set()  # a memory is replaced once, by the first text naming it
    for digest, (given, text, tags) in wanted.items():
        if digest in stored or any(h in stored for h in legacy[digest]):
            continue
        memory = ArchivalMemory(
            agent_id=agent_id,
            memory_id=repository.new_memory_id(created_at),
            content=text,
            content_hash=digest,
            created_at=created_at,
            tags=tags,
            valid_from=since.get(digest),
        )
        attributes = vectors.attributes(vectors_by_text.get(given), engine.model_id)
        written, item = repository.archival_insert_ops(memory, attributes)
        ops += written
        items.append(item)
        memories.append(memory)
        ids = [i for i in asked_by[digest] if i not in claimed]
        claimed.update(ids)
        if not ids:
            continue
        olds = {i: ArchivalMemory.from_dynamo_item(asked[i]) for i in ids}
        replaced: list[ArchivalMemory] = []
        for memory_id, old in olds.items():
            if not old.current:
                continue
            at = max(memory.valid_since, old.valid_since)
            op, end = repository.supersede_op(asked[memory_id], at=at, by=memory.memory_id)
            ends.append(op)
            ended.append(end)
            replaced.append(ArchivalMemory.from_dynamo_item(end))
        kept = [old for old in olds.values() if not old.current]
        replacing.append(ArchivalInsert(memory, True, replaced=replaced, not_replaced=kept))
    return PlannedInserts([*ops, *ends], [*items, *ended], memories, replacing)
