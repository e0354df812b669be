"""The one search engine every caller uses: archival search (tools and REST), message search,
and the seed 002 and 004 surfaces built on them.

It keeps one index per agent in this process, loaded lazily from the table and refreshed
before every search from the agent's change log (`repository`), so a search sees every
write that returned before it began, on any replica, and never a deleted item. This
process's own writes go through `commit` and reach its index without a read. Indexes are
evicted least recently used first once their estimated size passes the memory budget.
"""

import asyncio
import logging
import time
import weakref
from collections import OrderedDict
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from api.embeddings.base import Embedder
from api.errors import AppError
from api.kit.clock import Clock
from api.kit.retry import MAX_ATTEMPTS, backoff
from api.observability import metrics
from api.search import documents, repository, tokens, when
from api.search.documents import Doc
from api.search.index import AgentIndex, Filters, Found, Listed, Mode, Query
from api.search.recent_vectors import RecentVectors
from api.search.repository import SearchRepository
from api.search.vectors import Vector
from api.store import keys
from api.store.table import SK, Delete, Item, Key, TxOp

log = logging.getLogger(__name__)

DEFAULT_MEMORY_BUDGET = 1024 * 1024 * 1024
MAX_PENDING = 100  # own writes kept for an index until its next search
MAX_CATCH_UP = 2000  # changes read one by one; past this a full reload is cheaper
INLINE_DOCS = 10_000  # indexes this small are searched on the event loop (about a millisecond)
INLINE_CHANGES = 200  # items applied to an index on the event loop; more go to a thread
# Cosine below which a document is not a semantic match, per model, calibrated on labelled
# pairs (bench/calibrate.py over bench/recall_data/pairs.json): the floor with the best F1
# between related pairs kept and unrelated ones admitted (all-MiniLM-L6-v2, whichever
# backend runs it: 86% kept, 21% admitted; the static model: 88% and 39%, no floor
# separates its pairs well). OpenAI's is not calibrated here (no network): a common choice.
MINILM_MIN_SIMILARITY = 0.31
MIN_SIMILARITY = {"onnx": MINILM_MIN_SIMILARITY, "static": 0.26, "openai": 0.3}
DEFAULT_MIN_SIMILARITY = 0.3
BACKGROUND_WAIT_SECONDS = 10.0  # at shutdown, for writes still under way
# Vectors of batches up to this size are kept for reuse (queries, a turn's messages); a
# bulk load or a re-embedding would only push them out.
RECENT_BATCH = 16


def floor_of(model_id: str | None) -> float:
    """A model's similarity floor, from its id (`onnx:all-minilm-l6-v2-onnx-int8`)."""
    name = (model_id or "").lower()
    kind = name.split(":", 1)[0]
    if kind in MIN_SIMILARITY:
        return MIN_SIMILARITY[kind]
    if "minilm" in name:  # the same model run by local or ollama
        return MINILM_MIN_SIMILARITY
    return DEFAULT_MIN_SIMILARITY


class SemanticSearchUnavailable(AppError):
    status_code = 400
    code = "semantic_search_unavailable"


class SearchBusy(AppError):
    status_code = 503
    code = "search_busy"


@dataclass
class _Pending:
    """This process's own committed write, waiting to be applied to the agent's index."""

    version: int
    upserts: list[Item]
    removed: list[str]


class SearchEngine:
    def __init__(
        self,
        repository: SearchRepository,
        embedder: Embedder | None,
        clock: Clock,
        *,
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
    ) -> None:
        # Private: every other reader and writer of the table goes through its own
        # repository, never through the engine.
        self._repository = repository
        self.embedder = embedder
        self.clock = clock
        self.memory_budget = memory_budget
        self._indexes: OrderedDict[str, AgentIndex] = OrderedDict()
        self._sizes: dict[str, int] = {}
        # Locks live as long as someone holds or awaits them: no lock per agent ever seen.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._pending: dict[str, list[_Pending]] = {}
        self._versions: dict[str, int] = {}  # the last version this process saw, per agent
        self._writing: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._background: set[asyncio.Task[None]] = set()
        self._applying: set[str] = set()  # agents whose own writes are about to be applied
        self._reported = metrics.SearchIndexSizes()  # what the process's gauges hold of ours
        self._recent = RecentVectors()
        self._floor = floor_of(self.model_id)

    @property
    def model_id(self) -> str | None:
        return self.embedder.model_id if self.embedder else None

    def mode_for(self, mode: Mode | None) -> Mode:
        """The mode a search asking for `mode` runs in: hybrid by default with an embedder,
        lexical without one (semantic without one is refused)."""
        if self.embedder is not None:
            return mode or "hybrid"
        if mode == "semantic":
            raise SemanticSearchUnavailable(
                "Semantic search needs an embedding backend; this server runs with "
                "MEMORY_EMBEDDING_BACKEND=none. Use mode=lexical."
            )
        return "lexical"

    @property
    def min_similarity(self) -> float:
        """The model's similarity floor: semantic results below it are never returned."""
        return self._floor

    # --- writing -----------------------------------------------------------------------

    async def vectors(
        self, texts: Sequence[str], *, background: bool = False
    ) -> list[Vector | None]:
        """One vector per text from the configured model; None for every text without one.
        `background`: for storing, with nobody waiting (`Embedder.embed_async`)."""
        if self.embedder is None or not texts:
            return [None] * len(texts)
        return list(await self._embedded(texts, background=background))

    async def _embedded(self, texts: Sequence[str], *, background: bool = False) -> list[Vector]:
        """The texts' vectors: the recently embedded ones from memory, the others from the
        embedder in one call."""
        assert self.embedder is not None
        found: dict[str, Vector] = {}
        missing: list[str] = []
        for text in dict.fromkeys(texts):
            vector = self._recent.get(text)
            if vector is None:
                missing.append(text)
            else:
                found[text] = vector
        if missing:
            rows: Sequence[Vector] = list(
                await self.embedder.embed_async(missing, background=background)
            )
            if len(missing) <= RECENT_BATCH:
                rows = [self._recent.keep(t, row) for t, row in zip(missing, rows, strict=True)]
            found.update(zip(missing, rows, strict=True))
        return [found[t] for t in texts]

    async def commit(
        self,
        agent_id: str,
        ops: Sequence[TxOp],
        *,
        upserts: Sequence[Item] = (),
        removed: Sequence[str] = (),
    ) -> None:
        """Write `ops` together with the change naming the searchable items they put
        (`upserts`, also among `ops`) and delete (`removed` sort keys). A refused condition
        of `ops` raises TransactionCancelled, to be read by the labels of `ops`."""
        touched = [item[SK] for item in upserts] + list(removed)
        # This process's writers of one agent take turns: racing each other on the version
        # would only make all but one of them read it again and retry.
        async with _lock_of(self._writing, agent_id):
            await self._commit(agent_id, ops, upserts, removed, touched)

    async def _commit(
        self,
        agent_id: str,
        ops: Sequence[TxOp],
        upserts: Sequence[Item],
        removed: Sequence[str],
        touched: list[str],
    ) -> None:
        for attempt in range(MAX_ATTEMPTS):
            expected = self._versions.get(agent_id)
            if expected is None:
                expected = await self._repository.version(agent_id)
            try:
                written = await self._repository.commit(
                    agent_id, ops, touched, expected=expected, now=self.clock.now()
                )
            except repository.VersionMoved:
                self._versions.pop(agent_id, None)
                if attempt:
                    await backoff(attempt)
                continue
            self._versions[agent_id] = written
            if agent_id in self._indexes:
                pending = self._pending.setdefault(agent_id, [])
                # Past MAX_PENDING (an agent written to, not searched) the change log
                # catches the index up when it is next searched.
                if len(pending) < MAX_PENDING:
                    pending.append(_Pending(written, list(upserts), list(removed)))
                    self._apply_soon(agent_id)
            return
        raise SearchBusy("Too many writers changed this agent's memory at once; try again.")

    def _apply_soon(self, agent_id: str) -> None:
        """Apply this process's own writes to the agent's index right after they land,
        not when it is next searched: a search that follows a write (the learning()
        client's capture, then its next call's POST /context) then finds the index ready."""
        if agent_id not in self._applying:
            self._applying.add(agent_id)
            self.in_background(self._apply_own(agent_id))

    async def _apply_own(self, agent_id: str) -> None:
        self._applying.discard(agent_id)  # a write landing from now on schedules another
        async with self._lock(agent_id):
            index = self._indexes.get(agent_id)
            if index is None or not self._pending.get(agent_id):
                return
            await self._settle(agent_id, index, held=index)

    async def remove(self, agent_id: str, keys: Sequence[Key]) -> None:
        """Delete these searchable items of the agent, through the change log, as many
        transactions as they need."""
        step = repository.MAX_CHANGE_KEYS
        for start in range(0, len(keys), step):
            chunk = keys[start : start + step]
            await self.commit(agent_id, [Delete(k) for k in chunk], removed=[k.sk for k in chunk])

    def in_background(self, work: Coroutine[Any, Any, None]) -> "asyncio.Task[None]":
        """Run a write after the caller moved on; shutdown waits for it (`aclose`)."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background_done)
        return task

    def _background_done(self, task: "asyncio.Task[None]") -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a background search write failed", exc_info=task.exception())

    async def aclose(self) -> None:
        self._reported.report({})
        if self._background:
            await asyncio.wait(set(self._background), timeout=BACKGROUND_WAIT_SECONDS)
        if self.embedder is not None:
            await self.embedder.aclose()

    def forget(self, agent_id: str) -> None:
        """Drop what this process holds of an agent (it was deleted)."""
        self._indexes.pop(agent_id, None)
        self._sizes.pop(agent_id, None)
        self._pending.pop(agent_id, None)
        self._versions.pop(agent_id, None)
        self._reported.report(self._sizes)

    # --- searching ---------------------------------------------------------------------

    async def search(
        self,
        agent_id: str,
        text: str,
        *,
        mode: Mode | None = None,
        filters: Filters | None = None,
        offset: int = 0,
        limit: int = 10,
        min_similarity: float | None = None,
    ) -> Found:
        """Matches for `text`, best first. `mode` defaults to hybrid with an embedder and
        lexical without; hybrid without an embedder is lexical. `min_similarity` replaces
        the model's floor (a caller that wants only close matches, or looser ones)."""
        chosen = self.mode_for(mode)
        floor = self.min_similarity if min_similarity is None else min_similarity
        start = time.perf_counter()
        try:
            return await self._search(agent_id, text, chosen, filters, offset, limit, floor)
        finally:
            metrics.SEARCH_SECONDS.labels(chosen).observe(time.perf_counter() - start)

    async def _search(
        self,
        agent_id: str,
        text: str,
        chosen: Mode,
        filters: Filters | None,
        offset: int,
        limit: int,
        floor: float,
    ) -> Found:
        vector_work = None
        vector = self._recent.get(text) if chosen != "lexical" else None
        if chosen != "lexical" and vector is None:
            vector_work = asyncio.ensure_future(self._embedded([text]))
            # Its failure is reported by the await below, or never wanted (the read failed).
            vector_work.add_done_callback(lambda t: t.cancelled() or t.exception())
        try:
            current = await self._repository.version(agent_id)
            if vector_work is not None:
                vector = (await vector_work)[0]
        except BaseException:
            if vector_work is not None:
                vector_work.cancel()
            raise
        now = self.clock.now()
        query = Query(
            terms=tokens.tokenize(text),
            vector=vector,
            mode=chosen,
            min_similarity=floor,
            window=when.span(text, now),
            recent=when.asks_about_now(text),
            past=when.asks_about_past(text),
        )
        async with self._lock(agent_id):
            index = await self._fresh(agent_id, current)
            if len(index) <= INLINE_DOCS:
                return index.search(
                    query, filters or Filters(), now=now, offset=offset, limit=limit
                )
            return await asyncio.to_thread(
                index.search, query, filters or Filters(), now=now, offset=offset, limit=limit
            )

    async def latest(
        self,
        agent_id: str,
        *,
        filters: Filters | None = None,
        before: str | None = None,
        limit: int = 10,
    ) -> Listed:
        """The newest items the filters admit, newest first, with how many there are: a
        listing from the agent's index, as fresh as a search's (one read of the version),
        never a read of the partition. `before`: a sort key; only items older than it."""
        current = await self._repository.version(agent_id)
        now = self.clock.now()
        chosen = filters or Filters()
        async with self._lock(agent_id):
            index = await self._fresh(agent_id, current)
            if len(index) <= INLINE_DOCS:
                return index.latest(chosen, now=now, before=before, limit=limit)
            return await asyncio.to_thread(
                index.latest, chosen, now=now, before=before, limit=limit
            )

    def _lock(self, agent_id: str) -> asyncio.Lock:
        return _lock_of(self._locks, agent_id)

    async def _fresh(self, agent_id: str, current: int) -> AgentIndex:
        """The agent's index with every change up to version `current`, read after the
        search began (the caller holds the agent's lock)."""
        index = held = self._indexes.get(agent_id)
        if index is not None and current < index.version:
            # Read before this call waited for the lock, while another caught the index up
            # further? Or the agent's partition was deleted (its version starts again)?
            current = max(current, await self._repository.version(agent_id))
        if index is None or current < index.version:
            index = await self._load(agent_id, current)
        else:
            self._apply_pending(agent_id, index)
            if index.version < current and not await self._catch_up(agent_id, index, current):
                index = await self._load(agent_id, current)
        if await self._settle(agent_id, index, held=held):
            self._versions[agent_id] = max(self._versions.get(agent_id, 0), index.version)
        return index

    async def _settle(self, agent_id: str, index: AgentIndex, *, held: AgentIndex | None) -> bool:
        """The agent's own writes waiting for `index` applied, the index rebuilt if they
        call for it, and kept; unless the agent was forgotten (deleted) meanwhile, which
        the index the engine held when the caller began (`held`) being gone tells: a
        deleted agent's index is not put back. Whether it was kept."""
        self._apply_pending(agent_id, index)
        # Those past a gap (another process's write between) wait for the next search,
        # which reads the gap from the change log.
        later = [p for p in self._pending.get(agent_id, []) if p.version > index.version]
        if later:
            self._pending[agent_id] = later
        else:
            self._pending.pop(agent_id, None)
        if index.needs_rebuild():
            await asyncio.to_thread(index.rebuild)
        if self._indexes.get(agent_id) is not held:
            return False
        self._keep(agent_id, index)
        return True

    async def _load(self, agent_id: str, version: int) -> AgentIndex:
        model_id = self.model_id
        dimension = self.embedder.dimension if self.embedder else None

        def parse(items: list[Item]) -> list[Doc]:
            return [d for d in (documents.of_item(i, model_id) for i in items) if d is not None]

        async def read(query: keys.Query) -> list[Doc]:
            docs: list[Doc] = []
            async for page in self._repository.pages(query):
                docs += await asyncio.to_thread(parse, page)  # off the loop, page by page
            return docs

        # Memories and messages are read together: one round of paged queries, not two.
        kinds = await asyncio.gather(*map(read, repository.searchable_queries(agent_id)))
        self._pending.pop(agent_id, None)
        docs = [doc for found in kinds for doc in found]
        return await asyncio.to_thread(AgentIndex, docs, version=version, dimension=dimension)

    def _apply_pending(self, agent_id: str, index: AgentIndex) -> None:
        for pending in sorted(self._pending.get(agent_id, []), key=lambda p: p.version):
            if pending.version != index.version + 1:
                continue  # older than the index, or after a gap the change log will fill
            self._apply(index, {i[SK]: i for i in pending.upserts}, pending.removed)
            index.version = pending.version

    async def _catch_up(self, agent_id: str, index: AgentIndex, current: int) -> bool:
        """Apply changes index.version+1..current from the log; False when a full reload is
        needed instead."""
        if current - index.version > MAX_CATCH_UP:
            return False
        refs = await self._repository.changes(agent_id, index.version + 1, current)
        if refs is None:
            return False
        touched = [sk for change in refs for sk in change]
        found = await self._repository.items(agent_id, touched)
        # Re-read, not replayed: an item's state now is what its changes add up to.
        removed = [sk for sk in touched if sk not in found]
        if len(touched) <= INLINE_CHANGES:
            self._apply(index, found, removed)
        else:  # parsing, tokenizing and decoding thousands of items is no work for the loop
            await asyncio.to_thread(self._apply, index, found, removed)
        index.version = current
        return True

    def _apply(self, index: AgentIndex, upserts: dict[str, Item], removed: Sequence[str]) -> None:
        for sk in removed:
            index.remove(sk)
        for item in upserts.values():
            doc: Doc | None = documents.of_item(item, self.model_id)
            if doc is not None:
                index.upsert(doc)

    def _keep(self, agent_id: str, index: AgentIndex) -> None:
        self._indexes[agent_id] = index
        self._indexes.move_to_end(agent_id)
        self._sizes[agent_id] = index.nbytes()
        while sum(self._sizes.values()) > self.memory_budget and len(self._indexes) > 1:
            evicted, _ = self._indexes.popitem(last=False)
            self._sizes.pop(evicted, None)
            self._pending.pop(evicted, None)
            log.info("search index of agent %s evicted (memory budget)", evicted)
        self._reported.report(self._sizes, agent_id, len(index))


def _lock_of(locks: "weakref.WeakValueDictionary[str, asyncio.Lock]", key: str) -> asyncio.Lock:
    lock = locks.get(key)
    if lock is None:
        lock = locks[key] = asyncio.Lock()
    return lock
