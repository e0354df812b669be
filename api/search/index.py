"""One agent's index in memory: pure computation, no I/O, not thread-safe (the engine holds
the agent's lock around every call).

Most documents sit in a *main* segment built in one go: a bm25s index over their terms and
one float32 matrix of their vectors. bm25s cannot add documents to an index, so documents
written since then sit in a small *delta* (`delta.py`, arrays scored in one go) with the
same BM25 formula (and the main segment's document frequencies); a removed main document
is only masked. Past a threshold the whole index is rebuilt from its live documents.
"""

import bisect
import ctypes
import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, overload

import bm25s
import numpy as np
import numpy.typing as npt

from api.search import links, tokens
from api.search.delta import Delta
from api.search.documents import KINDS, MEMORY_KINDS, Doc, Kind
from api.search.vectors import Quantized, Vector

Mode = Literal["hybrid", "lexical", "semantic"]
MODES: tuple[Mode, ...] = ("hybrid", "lexical", "semantic")

K1 = 1.5  # bm25s's default saturation, used for the delta as for the main segment
# No length normalisation: a longer message is usually the one with the details, and with
# it a one-word search ranks every match alike, newest first, as seed 000 shows. On our
# evaluation (bench/recall.py) b=0 beats bm25s's 0.75 in every mode.
B = 0.0
RRF_K = 60  # the constant of reciprocal rank fusion (Cormack et al.)
RANK_DEPTH = 1000  # places ranked one by one in each list of a fusion
LEXICAL_WEIGHT = 1.0
# 1.5 for a transformer lifted our evaluation's MRR by 0.02 but reordered seed 003's own
# example of three equal word matches: both lists weigh alike.
DENSE_WEIGHT = 1.0
WINDOW_SLACK = 0.1  # how far below the similarity floor a document said in the window may be
# In hybrid mode, how far below the floor a document sharing a word with the question may
# be and still match (bench/recall.py: questions nothing answers that got anything, 88% ->
# 69%; paraphrases' MRR 0.50 -> 0.54; the conversations' 0.573 -> 0.566).
LEXICAL_SUPPORT = 0.1
CONTEXT_WEIGHT = 0.5  # how much of the preceding message's score a message takes
WINDOW_WEIGHT = 2.0  # the weight of "within the time the question names" in the fusion
RECENT_WEIGHT = 1.0  # the weight of recency, for questions about how things are now
RECENT_POOL = 20  # ...among this many of the best matches
PAST_WEIGHT = 2.0  # the weight of "no longer true", for questions about how things were
DELTA_MIN = 256  # documents the delta may hold before a rebuild...
DELTA_SHARE = 0.05  # ...or this share of the main segment, whichever is larger
DEAD_SHARE = 0.25  # masked documents in the main segment that trigger a rebuild
# What a document holds beside its text, its vector, its postings and its terms: the Doc
# (176 bytes), its sort key, id and content hash (about 310), its entries in the arrays (about
# 60) and what the load leaves scattered (measured with tracemalloc and a worker's RSS at
# 100k memories; bench/search.py).
DOC_OVERHEAD_BYTES = 700
TERM_BYTES = 200  # a distinct term: its stem, its entries in bm25s's vocabulary
QUANTIZE_BLOCK = 4096  # documents whose vectors are stacked and quantized at once
TRIM_DOCS = 5000  # builds of at least this many documents give freed memory back

Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Filters:
    kinds: frozenset[Kind] = MEMORY_KINDS
    roles: frozenset[str] | None = None
    actor_id: str | None = None
    conversation_id: str | None = None
    after: float | None = None  # created at or after
    before: float | None = None  # created before
    # Archival memories carrying any of these as a tag or as their category (seed 004's
    # `tags=user,assistant`, seed 003's categories).
    tags: frozenset[str] | None = None
    categories: frozenset[str] | None = None  # archival memories of these categories
    # What was true at this moment (epoch seconds): messages said by then, memories valid
    # then. None: what is true now, the memories no other has superseded, unless `history`
    # admits those too.
    as_of: float | None = None
    history: bool = False
    attribute: str | None = None  # archival memories stating this attribute (`facts`)

    def admits(self, doc: Doc) -> bool:
        return (
            doc.kind in self.kinds
            and (
                doc.valid_at(self.as_of)
                if self.as_of is not None
                else self.history or doc.superseded_at is None
            )
            and (self.attribute is None or doc.attribute == self.attribute)
            and (self.categories is None or doc.category in self.categories)
            and (
                self.tags is None or doc.category in self.tags or not self.tags.isdisjoint(doc.tags)
            )
            and (self.roles is None or doc.role in self.roles)
            and (self.actor_id is None or doc.actor_id == self.actor_id)
            and (self.conversation_id is None or doc.conversation_id == self.conversation_id)
            and (self.after is None or doc.created_at >= self.after)
            and (self.before is None or doc.created_at < self.before)
        )


@dataclass(frozen=True)
class Hit:
    doc: Doc
    score: float  # what the mode ranks by: fused (hybrid), BM25 (lexical) or cosine
    similarity: float | None  # cosine with the query, when the document has a vector
    # A message's neighbouring turns in its conversation, as context for the match (an
    # answer often shares nothing with the question: "How was the race?" "We had a
    # curry"): shown beside it, never matches themselves.
    before: Doc | None = None
    after: Doc | None = None


@dataclass(frozen=True)
class Found:
    total: int  # every match, not only this page
    hits: list[Hit] = field(default_factory=list)
    mode: Mode = "lexical"  # the mode that ranked them


@dataclass(frozen=True)
class Listed:
    """A listing, newest first: a page of documents and how many the filters admit."""

    total: int  # every admitted document, not only this page
    docs: list[Doc] = field(default_factory=list)
    more: bool = False  # older admitted documents follow this page


@dataclass(frozen=True)
class Query:
    terms: list[str]
    vector: Vector | None  # None: no embedder, or lexical mode
    mode: Mode
    min_similarity: float
    window: tuple[float, float] | None = None  # a time the question names, [start, end)
    recent: bool = False  # the question asks how things are now
    past: bool = False  # the question asks how things were before ("where did I live before?")


def _validity(docs: Sequence[Doc]) -> tuple[Floats, Floats]:
    """When each document became true and until when it was (for "inside the time the
    question names"): a statement of an attribute from its start until superseded (now,
    while current); any other document, a note or a message, at one moment."""
    start = np.asarray([d.valid_since for d in docs], dtype=np.float64)
    until = np.asarray(
        [
            d.superseded_at
            if d.superseded_at is not None
            else (math.inf if d.attribute is not None else d.valid_since)
            for d in docs
        ],
        dtype=np.float64,
    )
    return start, until


def _codes(values: Iterable[str | None]) -> tuple[npt.NDArray[np.int32], dict[str, int]]:
    table: dict[str, int] = {}
    codes = [-1 if v is None else table.setdefault(v, len(table)) for v in values]
    return np.asarray(codes, dtype=np.int32), table


class _Positions:
    """Where each sort key sits among the main segment's documents, which are in sort key
    order: a binary search of the keys (a dict of them would take about 70 bytes a
    document)."""

    def __init__(self, sks: list[str]) -> None:
        self._sks = sks

    @overload
    def get(self, sk: str) -> int | None: ...

    @overload
    def get(self, sk: str, default: int) -> int: ...

    def get(self, sk: str, default: int | None = None) -> int | None:
        at = bisect.bisect_left(self._sks, sk)
        return at if at < len(self._sks) and self._sks[at] == sk else default


class _Main:
    """The documents of the last build, in sort key order (time order), as arrays.

    Their vectors move into one int8 matrix (`vectors.Quantized`): a document given with a
    vector leaves without it (`AgentIndex.docs` gives it back). A rebuild passes the
    quantized rows of its documents as `vectors` instead."""

    def __init__(
        self,
        docs: Sequence[Doc],
        dimension: int | None,
        vectors: tuple[Quantized, Mask] | None = None,
    ) -> None:
        self.docs = list(docs)
        n = len(self.docs)
        quantized, has_vector = vectors or _quantized(self.docs, dimension)
        if any(a.sk > b.sk for a, b in itertools.pairwise(self.docs)):
            order = sorted(range(n), key=lambda i: self.docs[i].sk)
            self.docs = [self.docs[i] for i in order]
            has_vector = has_vector[order]
            if quantized is not None:
                quantized.codes, quantized.scales = quantized.codes[order], quantized.scales[order]
        # Sort keys order by time (`...#{timestamp}#{id}`): listings newest first need no
        # search, and a key's position is a binary search away.
        self.sks = [d.sk for d in self.docs]
        self.position = _Positions(self.sks)
        self.alive = np.ones(n, dtype=np.bool_)
        self.kind = np.asarray([KINDS.index(d.kind) for d in self.docs], dtype=np.int8)
        self.created = np.asarray([d.created_at for d in self.docs], dtype=np.float64)
        self.ttl = np.asarray(
            [math.inf if d.ttl is None else d.ttl for d in self.docs], dtype=np.float64
        )
        self.expiring = bool(np.isfinite(self.ttl).any())
        self.start, self.until = _validity(self.docs)
        self.superseded = np.asarray([d.superseded_at is not None for d in self.docs], np.bool_)
        self.attribute, self.attributes = _codes(d.attribute for d in self.docs)
        self.role, self.roles = _codes(d.role for d in self.docs)
        self.actor, self.actors = _codes(d.actor_id for d in self.docs)
        self.conversation, self.conversations = _codes(d.conversation_id for d in self.docs)
        self.category, self.categories = _codes(d.category for d in self.docs)
        self.tagged: dict[str, list[int]] = {}  # tag: the documents carrying it
        for i, d in enumerate(self.docs):
            for tag in d.tags:
                self.tagged.setdefault(tag, []).append(i)
        self.has_vector = has_vector
        self.vectors = quantized if quantized is not None and has_vector.any() else None
        self.previous = np.full(n, -1, dtype=np.int64)
        threads = sorted(
            (d.conversation_id, d.created_at, d.sk, i)
            for i, d in enumerate(self.docs)
            if d.conversation_id is not None
        )
        for before, after in itertools.pairwise(threads):
            if before[0] == after[0]:
                self.previous[after[3]] = before[3]
        self.threaded = bool((self.previous >= 0).any())  # any message with one before it
        terms = [tokens.tokenize(d.text) for d in self.docs]
        self.avgdl = sum(len(t) for t in terms) / n if n else 1.0
        self.retriever: bm25s.BM25 | None = None
        if any(terms):  # bm25s cannot index documents without a single word ("👍", "...")
            self.retriever = bm25s.BM25(k1=K1, b=B)
            self.retriever.index(terms, show_progress=False)
        self.nbytes = self._nbytes()

    @property
    def dead(self) -> int:
        return int(len(self.docs) - self.alive.sum())

    def mask(self, filters: Filters, now: float) -> Mask:
        mask = self.alive & (self.ttl > now) if self.expiring else self.alive.copy()
        if len(filters.kinds) == 1:
            mask &= self.kind == KINDS.index(next(iter(filters.kinds)))
        elif len(filters.kinds) < len(KINDS):
            mask &= np.isin(self.kind, [KINDS.index(k) for k in filters.kinds])
        if filters.roles is not None:
            mask &= np.isin(self.role, [self.roles.get(r, -2) for r in filters.roles])
        if filters.actor_id is not None:
            mask &= self.actor == self.actors.get(filters.actor_id, -2)
        if filters.conversation_id is not None:
            mask &= self.conversation == self.conversations.get(filters.conversation_id, -2)
        if filters.after is not None:
            mask &= self.created >= filters.after
        if filters.before is not None:
            mask &= self.created < filters.before
        if filters.as_of is not None:
            # A message's start is when it was said; only a superseded memory's end counts.
            mask &= (self.start <= filters.as_of) & (
                (self.until > filters.as_of) | ~self.superseded
            )
        elif not filters.history:
            mask &= ~self.superseded
        if filters.attribute is not None:
            mask &= self.attribute == self.attributes.get(filters.attribute, -2)
        if filters.categories is not None:
            mask &= self._of_categories(filters.categories)
        if filters.tags is not None:
            tagged = self._of_categories(filters.tags)
            for tag in filters.tags:
                tagged[self.tagged.get(tag, [])] = True
            mask &= tagged
        return mask

    def _of_categories(self, names: frozenset[str]) -> Mask:
        return np.isin(self.category, [self.categories.get(c, -2) for c in names])

    def df(self, term: str) -> int:
        """How many documents hold `term`: its postings in the bm25s index (one per
        document holding it), not a table of its own."""
        column = self.retriever.vocab_dict.get(term) if self.retriever is not None else None
        if column is None or self.retriever is None:
            return 0
        indptr = self.retriever.scores["indptr"]
        return int(indptr[column + 1] - indptr[column])

    def bm25(self, terms: list[str]) -> Floats:
        if self.retriever is None:
            return np.zeros(len(self.docs), dtype=np.float64)
        known = [t for t in terms if t in self.retriever.vocab_dict]
        if not known:
            return np.zeros(len(self.docs), dtype=np.float64)
        return np.asarray(self.retriever.get_scores(known), dtype=np.float64)

    def _nbytes(self) -> int:
        vectors = self.vectors.nbytes if self.vectors is not None else 0
        postings = terms = 0
        if self.retriever is not None:
            postings = sum(a.nbytes for a in self.retriever.scores.values() if hasattr(a, "nbytes"))
            terms = TERM_BYTES * len(self.retriever.vocab_dict)
        texts = sum(DOC_OVERHEAD_BYTES + 2 * len(d.text) + d.metadata_bytes for d in self.docs)
        return vectors + postings + terms + texts


def _malloc_trim() -> "ctypes._NamedFuncPointer | None":
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc's
    except (AttributeError, OSError):  # another C library (musl, macOS): nothing to call
        return None


_MALLOC_TRIM = _malloc_trim()


def _give_back_freed_memory() -> None:
    """Return the C heap's free pages to the system. A load frees about as much as it
    keeps, interleaved with what it keeps (the items read, each vector's bytes until it is
    quantized, the terms of every document while bm25s indexes them): glibc keeps such
    pages resident unless asked (at 100k memories, about 50 MiB of a worker's memory)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _quantized(docs: list[Doc], dimension: int | None) -> tuple[Quantized | None, Mask]:
    """The documents' vectors as int8 rows, a block at a time (no float32 copy of them all);
    the documents are left without them."""
    has_vector = np.fromiter((d.vector is not None for d in docs), np.bool_, len(docs))
    if not dimension or not has_vector.any():
        return None, has_vector
    quantized = Quantized(len(docs), dimension)
    for start in range(0, len(docs), QUANTIZE_BLOCK):
        rows = start + np.flatnonzero(has_vector[start : start + QUANTIZE_BLOCK])
        if len(rows):
            quantized.put(rows, np.stack([docs[i].vector for i in rows]))  # type: ignore[misc]
    for d in docs:
        d.vector = None
    return quantized, has_vector


class AgentIndex:
    def __init__(self, docs: Iterable[Doc], *, version: int, dimension: int | None) -> None:
        self.version = version
        self.dimension = dimension
        self._main = _Main(list(docs), dimension)
        self._delta = Delta(dimension)
        self._delta_metadata_bytes = 0  # of the documents put in the delta, as the main's
        # Each conversation's messages in time order, to find the one before a new message.
        self._threads: dict[str, list[tuple[float, str]]] = {}
        for doc in self._main.docs:
            if doc.conversation_id is not None:
                self._threads.setdefault(doc.conversation_id, []).append((doc.created_at, doc.sk))
        for thread in self._threads.values():
            thread.sort()
        if len(self._main.docs) >= TRIM_DOCS:
            _give_back_freed_memory()

    def __len__(self) -> int:
        return int(self._main.alive.sum()) + len(self._delta)

    def docs(self) -> list[Doc]:
        """Every live document, with its vector as the index holds it (quantized: an index
        built from them holds the same)."""
        main, delta = self._main, self._delta
        found = []
        for i in np.flatnonzero(main.alive).tolist():
            doc = main.docs[i]
            if main.vectors is not None and main.has_vector[i]:
                doc = dataclasses.replace(doc, vector=main.vectors.vector(i))
            found.append(doc)
        for slot, fresh in enumerate(delta.docs):
            if fresh is not None:
                found.append(dataclasses.replace(fresh, vector=delta.vector(slot)))
        return found

    # --- changes ---------------------------------------------------------------------

    def upsert(self, doc: Doc) -> None:
        """Add or replace a document; its vector is kept in the delta's matrix, not on the
        copy of it the index holds (`doc` itself is left as it is)."""
        self.remove(doc.sk)
        vector, doc = doc.vector, dataclasses.replace(doc, vector=None)
        slot = self._delta.add(doc, tokens.tokenize(doc.text), vector)
        self._delta_metadata_bytes += doc.metadata_bytes
        if doc.conversation_id is not None:
            thread = self._threads.setdefault(doc.conversation_id, [])
            at = bisect.bisect_left(thread, (doc.created_at, doc.sk))
            thread.insert(at, (doc.created_at, doc.sk))
            self._delta.previous[slot] = self._position(thread[at - 1][1]) if at else -1
            self._follows(thread, at + 1, len(self._main.docs) + slot)

    def remove(self, sk: str) -> None:
        i = self._main.position.get(sk)
        doc = self._delta.remove(sk)
        if doc is None and i is not None and self._main.alive[i]:
            doc = self._main.docs[i]
        if i is not None:
            self._main.alive[i] = False
        if doc is not None and doc.conversation_id is not None:
            thread = self._threads.get(doc.conversation_id, [])
            at = bisect.bisect_left(thread, (doc.created_at, doc.sk))
            if at < len(thread) and thread[at] == (doc.created_at, doc.sk):
                del thread[at]
                self._follows(thread, at, self._position(thread[at - 1][1]) if at else -1)

    def _position(self, sk: str) -> int:
        """Where a live document sits in the arrays of a search: the delta's slots follow
        the main segment's documents."""
        slot = self._delta.slot.get(sk)
        if slot is not None:
            return len(self._main.docs) + slot
        return self._main.position.get(sk, -1)

    def _follows(self, thread: list[tuple[float, str]], at: int, previous: int) -> None:
        """The message at `at` of a thread now follows `previous`: a delta document keeps
        it for its context. A main document keeps the one of the last build, as it always
        did (masked at search when that one is gone)."""
        if at < len(thread):
            slot = self._delta.slot.get(thread[at][1])
            if slot is not None:
                self._delta.previous[slot] = previous

    def needs_rebuild(self) -> bool:
        n = len(self._main.docs)
        most = max(DELTA_MIN, DELTA_SHARE * n)
        # Slots of replaced documents count too, past twice the limit: the delta's arrays
        # must not grow without end under one document rewritten over and over.
        return (
            len(self._delta) > most
            or self._delta.used > 2 * most
            or self._main.dead > max(DELTA_MIN, DEAD_SHARE * n)
        )

    def rebuild(self) -> None:
        main, delta = self._main, self._delta
        kept = np.flatnonzero(main.alive)
        fresh = [(slot, d) for slot, d in enumerate(delta.docs) if d is not None]
        slots = np.asarray([slot for slot, _ in fresh], dtype=np.intp)
        docs = [main.docs[i] for i in kept] + [d for _, d in fresh]
        has_vector = np.concatenate([main.has_vector[kept], delta.has_vector[slots]])
        vectors = Quantized(len(docs), self.dimension or 0)
        if main.vectors is not None:
            vectors.copy_from(0, main.vectors, kept)
        vectors.copy_from(len(kept), delta.vectors, slots)
        self._main = _Main(docs, self.dimension, (vectors, has_vector))
        if len(docs) >= TRIM_DOCS:
            _give_back_freed_memory()
        self._delta = Delta(self.dimension)  # the threads hold the same documents as before
        self._delta_metadata_bytes = 0

    def nbytes(self) -> int:
        # A delta slot: its document, its postings and terms in dicts, its arrays.
        per_fresh = 2 * DOC_OVERHEAD_BYTES + (self.dimension or 0)
        return self._main.nbytes + per_fresh * self._delta.used + self._delta_metadata_bytes

    # --- search ----------------------------------------------------------------------

    def search(
        self, query: Query, filters: Filters, *, now: float, offset: int, limit: int
    ) -> Found:
        """Scores every document, then keeps those the filters admit: a message's score
        takes some of the message before it (its context), whatever the filters say."""
        main, delta = self._main, self._delta
        fresh = delta.used  # the delta's slots, dead ones included (never admitted)
        size = len(main.docs) + fresh
        # A question about the past or a named time looks among superseded memories too;
        # which of them it may find is decided below.
        widened = (
            (query.past or query.window is not None)
            and filters.as_of is None
            and not filters.history
        )
        scope = dataclasses.replace(filters, history=True) if widened else filters
        live = main.mask(scope, now)
        created = main.created
        previous = main.previous if main.threaded else None
        fresh_present = delta.present(now)
        if fresh:
            admitted = delta.admitted(scope, scope.admits) & fresh_present
            live = np.concatenate([live, admitted])
            created = np.concatenate([created, delta.created[:fresh]])
            previous = np.concatenate([main.previous, delta.previous[:fresh]])

        inside = np.zeros(size, dtype=np.bool_)
        superseded = np.zeros(size, dtype=np.bool_)
        if query.window is not None or query.past:
            start, until, superseded = self._validity()
            if query.window is not None:
                begin, end = query.window
                inside = live & (start < end) & (until >= begin)
            if widened and not query.past:  # "in 2024": what was true then, not before
                live &= ~superseded | inside
        if not live.any():
            return Found(0, mode=query.mode)

        lexical = np.zeros(size, dtype=np.float64)
        terms = list(dict.fromkeys(query.terms))  # a word said twice counts once
        if query.mode != "semantic" and terms:
            lexical = self._bm25(terms)

        similarity: Floats | None = None
        has_vector = np.zeros(size, dtype=np.bool_)
        if query.mode != "lexical" and query.vector is not None:
            similarity = np.zeros(size, dtype=np.float64)
            if main.vectors is not None:
                similarity[: len(main.docs)] = main.vectors.cosines(query.vector, len(main.docs))
                has_vector[: len(main.docs)] = main.has_vector
            if fresh and delta.has_vector[:fresh].any():
                has_vector[len(main.docs) :] = delta.has_vector[:fresh]
                similarity[len(main.docs) :] = np.where(
                    has_vector[len(main.docs) :], delta.cosines(query.vector), 0.0
                )

        if previous is not None:  # a removed or expired message lends its words to none
            present = main.mask(Filters(), now)
            if fresh:
                present = np.concatenate([present, fresh_present])
            previous = np.where(present[np.maximum(previous, 0)], previous, -1)
        # A document matches on its own words or its own meaning; the message before it
        # (its context) may move it up among the matches, never make it one.
        lexical_match = live & (lexical > 0)
        lexical_score = _with_context(lexical, previous)
        dense_match = np.zeros(size, dtype=np.bool_)
        dense_score = np.zeros(size, dtype=np.float64)
        if similarity is not None:
            dense_match = live & has_vector & (similarity >= query.min_similarity)
            dense_score = _with_context(np.where(has_vector, similarity, 0.0), previous)

        past = live & superseded if query.past else np.zeros(size, dtype=np.bool_)
        match query.mode:
            case "lexical":
                matched, score = lexical_match, lexical_score
            case "semantic":
                matched, score = dense_match, dense_score
            case "hybrid":
                # Within the time the question names, a weaker resemblance is enough:
                # the time is half of what was asked ("what did I do last May?").
                near = (lexical_score > 0) | (dense_score >= query.min_similarity - WINDOW_SLACK)
                if similarity is not None:
                    # A word in common is a match when the meaning is not far off: "team"
                    # alone does not make a team rota answer a question about football.
                    supported = similarity >= query.min_similarity - LEXICAL_SUPPORT
                    lexical_match &= ~has_vector | supported
                matched = lexical_match | dense_match | (inside & near)
                lists = [(lexical_score, lexical_match, LEXICAL_WEIGHT)]
                if similarity is not None:
                    lists.append((dense_score, dense_match, DENSE_WEIGHT))
                if (matched & inside).any():
                    # Within the time the question names, ranked by what it asks about.
                    relevance = dense_score if similarity is not None else lexical_score
                    lists.append((relevance, matched & inside, WINDOW_WEIGHT))
                if query.recent:
                    recent = matched & _top(lists, created, RECENT_POOL)
                    lists.append((created, recent, RECENT_WEIGHT))
                if (matched & past).any():
                    # What was true before, ranked by what it asks about.
                    relevance = dense_score if similarity is not None else lexical_score
                    lists.append((relevance, matched & past, PAST_WEIGHT))
                score = _fused(lists, created)
        if query.mode != "hybrid":
            for first in (inside, past):
                if first.any():
                    score = score + (matched & first) * (float(score.max()) + 1.0)
        if matched.any():
            # A question that needs two items: what the best matches name leads to the other.
            def eligible() -> tuple[Mask, Floats]:
                """Items a name may bring, and how close each is to the question."""
                if similarity is not None:
                    floor = query.min_similarity - links.SLACK
                    return live & has_vector & (similarity >= floor), similarity
                # No meaning to go by: only items sharing a word with the question.
                return live & (lexical > 0), lexical

            lifted = self._linked(terms, matched, score, created, eligible)
            if lifted is not None:
                share, reached = lifted
                score = np.where(reached, np.maximum(score, share), score)
                matched = matched | reached
        chosen = np.flatnonzero(matched)
        page = _page(chosen, score, created, offset, limit)
        return Found(
            mode=query.mode,
            total=len(chosen),
            hits=[
                self._hit(
                    self._doc(i),
                    score=float(score[i]),
                    similarity=float(similarity[i])
                    if similarity is not None and has_vector[i]
                    else None,
                    now=now,
                )
                for i in page
            ],
        )

    def _linked(
        self,
        terms: list[str],
        matched: Mask,
        score: Floats,
        created: Floats,
        eligible: Callable[[], tuple[Mask, Floats]],
    ) -> tuple[Floats, Mask] | None:
        """The items the best matches' names lead to (`links`) and the score each takes;
        None when they lead nowhere (most searches: `eligible` is not even computed)."""
        seeds = _page(np.flatnonzero(matched), score, created, 0, links.SEEDS).tolist()
        asked, size = set(terms), len(score)
        seed_links = [links.links(self._doc(i).text, asked, self._held_by, size) for i in seeds]
        if not any(seed_links):
            return None
        return links.linked(seeds, seed_links, self._bm25, score, *eligible())

    def _doc(self, position: int) -> Doc:
        main = self._main
        return main.docs[position] if position < len(main.docs) else self._fresh_doc(position)

    def _held_by(self, term: str) -> int:
        """How many documents hold `term` (the main segment's masked ones too)."""
        return self._main.df(term) + self._delta.df.get(term, 0)

    def _bm25(self, terms: list[str]) -> Floats:
        """Every position's BM25 for `terms`, the main segment's then the delta's."""
        main = self._main
        scores = np.zeros(len(main.docs) + self._delta.used, dtype=np.float64)
        scores[: len(main.docs)] = main.bm25(terms)
        scores[len(main.docs) :] = self._delta_bm25(terms)
        # bm25s adds in float32, the delta in float64: equal documents must tie.
        return np.round(scores, 5)

    def _hit(self, doc: Doc, *, score: float, similarity: float | None, now: float) -> Hit:
        if doc.conversation_id is None:
            return Hit(doc, score, similarity)
        thread = self._threads.get(doc.conversation_id, [])
        at = bisect.bisect_left(thread, (doc.created_at, doc.sk))
        before = self._live_doc(thread[at - 1][1], now) if at > 0 else None
        after = self._live_doc(thread[at + 1][1], now) if at + 1 < len(thread) else None
        return Hit(doc, score, similarity, before=before, after=after)

    def _live_doc(self, sk: str, now: float) -> Doc | None:
        slot = self._delta.slot.get(sk)
        if slot is not None:
            doc = self._delta.docs[slot]
        else:
            i = self._main.position.get(sk)
            doc = self._main.docs[i] if i is not None and self._main.alive[i] else None
        return doc if doc is not None and doc.live(now) else None

    def latest(
        self, filters: Filters, *, now: float, before: str | None = None, limit: int
    ) -> Listed:
        """The newest documents the filters admit, by sort key (time order), newest first;
        with `before`, those whose sort key sorts before it (the last of a previous page).
        No scoring: a mask over the main segment, its newest picked by rank, and the delta."""
        main = self._main
        admitted = main.mask(filters, now)
        fresh = [d for d in self._delta.live_docs() if d.live(now) and filters.admits(d)]
        total = int(admitted.sum()) + len(fresh)
        if before is not None:
            admitted[bisect.bisect_left(main.sks, before) :] = False
            fresh = [d for d in fresh if d.sk < before]
        chosen = np.flatnonzero(admitted)
        remaining = len(chosen) + len(fresh)
        if limit < 1:
            return Listed(total, more=remaining > 0)
        chosen = chosen[-limit:]  # the main segment is in sort key order
        newest = sorted([main.docs[i] for i in chosen] + fresh, key=lambda d: d.sk, reverse=True)
        return Listed(total, newest[:limit], more=remaining > limit)

    def _validity(self) -> tuple[Floats, Floats, Mask]:
        """Each position's start and end of validity (`_validity`), and whether it is a
        superseded memory: the main segment's arrays, the delta's made now (few)."""
        main, delta = self._main, self._delta
        if not delta.used:
            return main.start, main.until, main.superseded
        placeholder = Doc(sk="", kind="message", text="", created_at=0.0, item_id="")
        docs = [d if d is not None else placeholder for d in delta.docs]
        start, until = _validity(docs)
        superseded = np.fromiter((d.superseded_at is not None for d in docs), np.bool_, len(docs))
        return (
            np.concatenate([main.start, start]),
            np.concatenate([main.until, until]),
            np.concatenate([main.superseded, superseded]),
        )

    def _fresh_doc(self, position: int) -> Doc:
        doc = self._delta.docs[position - len(self._main.docs)]
        assert doc is not None  # a dead slot is never admitted
        return doc

    def _delta_bm25(self, terms: list[str]) -> Floats:
        """BM25 of delta documents as the main segment would score them (its document
        count and frequencies), so that a new document ties with an equal older one; a
        term only the delta holds is weighed among all documents."""
        main, delta = self._main, self._delta
        if not delta.used:
            return np.zeros(0, dtype=np.float64)
        everyone = len(main.docs) + len(delta)
        weights = []
        for term in terms:
            df, n = main.df(term), len(main.docs)
            if df == 0:
                df, n = delta.df.get(term, 0), everyone
            # bm25s's "lucene" idf; a term no document holds weighs nothing
            weights.append(math.log(1 + (n - df + 0.5) / (df + 0.5)) if df else 0.0)
        return delta.bm25(terms, weights, K1, B, main.avgdl)


def _ranks(score: Floats, matched: Mask, created: Floats) -> Floats:
    """1 for the best of the matched, 2 for the next...; infinity for the unmatched. Past
    RANK_DEPTH the matched share one rank: a list's tail adds next to nothing to a fusion,
    and sorting all of a large index for it would cost more than the rest of a search."""
    ranks = np.full(len(score), np.inf)
    chosen = np.flatnonzero(matched)
    if len(chosen) > RANK_DEPTH:
        ranks[chosen] = RANK_DEPTH + 1
    order = _ordered(_best(chosen, score, created, RANK_DEPTH), score, created)
    ranks[order] = np.arange(1, len(order) + 1)
    return ranks


def _page(
    chosen: npt.NDArray[np.intp], score: Floats, created: Floats, offset: int, limit: int
) -> npt.NDArray[np.intp]:
    """Positions offset..offset+limit of `chosen`, best first and, among equals, newest
    first (as a person expects of their notes). Only the best are sorted."""
    wanted = offset + limit
    return _ordered(_best(chosen, score, created, wanted), score, created)[offset:wanted]


def _ordered(chosen: npt.NDArray[np.intp], score: Floats, created: Floats) -> npt.NDArray[np.intp]:
    """`chosen` (in position order) best first; among equal scores newest first, then by
    position."""
    return chosen[np.lexsort((-created[chosen], -score[chosen]))]


def _best(
    chosen: npt.NDArray[np.intp], score: Floats, created: Floats, count: int
) -> npt.NDArray[np.intp]:
    """The first `count` of `chosen` (positions, ascending) as `_ordered` would order them,
    in position order, without sorting them all.

    Most of a large index often shares a handful of scores: a fusion gives every document
    past RANK_DEPTH in each list it matches the same share (when nearly every document
    resembles the question a little, nearly all of them), and a one-word search scores
    every match alike. np.partition slows down about tenfold on such ties, so a large group
    of equal scores is never partitioned: one at the bottom is dropped while the rest fill
    the page, one at the top (or at the cut) is cut by time instead."""
    if len(chosen) <= count:
        return chosen
    if count < 1:
        return chosen[:0]
    scores = score[chosen]
    while len(chosen) > 2 * count:
        above = scores > scores.min()
        kept = int(np.count_nonzero(above))
        if kept < count or 2 * kept > len(chosen):  # too few left, or few to drop
            break
        chosen, scores = chosen[above], scores[above]
    if len(chosen) <= count:
        return chosen
    top = scores.max()
    if np.count_nonzero(scores == top) >= count:
        cut = top
    else:
        cut = np.partition(scores, len(scores) - count)[len(scores) - count]
    better, tied = chosen[scores > cut], chosen[scores == cut]
    return np.sort(np.concatenate([better, _newest(tied, created, count - len(better))]))


def _newest(chosen: npt.NDArray[np.intp], created: Floats, count: int) -> npt.NDArray[np.intp]:
    """The `count` newest of `chosen` (positions, ascending); among equal times the first."""
    if len(chosen) <= count:
        return chosen
    times = created[chosen]
    cut = np.partition(times, len(times) - count)[len(times) - count]
    newer = chosen[times > cut]
    return np.concatenate([newer, chosen[times == cut][: count - len(newer)]])


def _fused(lists: Sequence[tuple[Floats, Mask, float]], created: Floats) -> Floats:
    """Reciprocal rank fusion: each list adds weight / (RRF_K + rank) to its documents."""
    fused = np.zeros(len(created), dtype=np.float64)
    for score, matched, weight in lists:
        fused += weight / (RRF_K + _ranks(score, matched, created))
    return fused


def _top(lists: Sequence[tuple[Floats, Mask, float]], created: Floats, count: int) -> Mask:
    """The documents among the first `count` of the fusion so far."""
    fused = _fused(lists, created)
    top = np.zeros(len(fused), dtype=np.bool_)
    top[np.argsort(-fused, kind="stable")[:count]] = True
    return top & (fused > 0)


def _with_context(score: Floats, previous: npt.NDArray[np.int64] | None) -> Floats:
    """A message's score, or a share of the one before it if that is more: an answer often
    shares no word with the question that its preceding message does ("How was the
    race?" "We celebrated with a curry")."""
    if previous is None:
        return score
    before = np.where(previous >= 0, score[np.maximum(previous, 0)], 0.0)
    return np.maximum(score, CONTEXT_WEIGHT * before)
