"""The delta of an agent's index: documents written since its main segment was built, held as
arrays so that a search scores all of them at once (one matrix product for the cosines, one
vector operation per query term for BM25) instead of one by one in Python.

Each document takes the next slot; a removed or replaced one leaves its slot dead (masked),
so positions never move until the next rebuild and live slots keep the order they were
written in. Pure computation, no I/O, not thread-safe (the engine's per-agent lock).
"""

from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from api.search.documents import Doc
from api.search.vectors import Quantized, Vector

FIRST_CAPACITY = 64  # slots allocated at first; doubled when full
# Filters whose verdicts on the slots are kept: a slot's document never changes, so each
# verdict is computed once, and a client asking the same way each time pays for new slots only.
KEPT_FILTERS = 16

Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


class Delta:
    def __init__(self, dimension: int | None) -> None:
        self.dimension = dimension
        self.slot: dict[str, int] = {}  # sort key of a live document: its slot
        self.docs: list[Doc | None] = []  # by slot; None once dead
        self.terms: list[Counter[str] | None] = []  # by slot: each term's count; None once dead
        self.df: Counter[str] = Counter()  # live documents holding each term
        # term: (slot, count) of every document written with it, dead ones included
        self.postings: dict[str, list[tuple[int, int]]] = {}
        capacity = FIRST_CAPACITY
        self.alive = np.zeros(capacity, dtype=np.bool_)
        self.created = np.zeros(capacity, dtype=np.float64)
        self.ttl = np.full(capacity, np.inf, dtype=np.float64)
        self.length = np.zeros(capacity, dtype=np.float64)  # terms of each document
        self.has_vector = np.zeros(capacity, dtype=np.bool_)  # of live slots
        # The position (in the whole index) of the message before each one in its
        # conversation, kept up to date by the index as its threads change; -1: none.
        self.previous = np.full(capacity, -1, dtype=np.int64)
        # Vectors as the main segment holds them (int8, a scale per row): a document scores
        # the same in either.
        self.vectors = Quantized(capacity, dimension or 0)
        self._verdicts: OrderedDict[Hashable, Mask] = OrderedDict()

    def __len__(self) -> int:
        return len(self.slot)

    @property
    def used(self) -> int:
        """Slots taken, dead ones included: the length of every array a search uses."""
        return len(self.docs)

    def live_docs(self) -> Iterator[Doc]:
        """Live documents in the order they were written."""
        return (d for d in self.docs if d is not None)

    def add(self, doc: Doc, terms: list[str], vector: npt.ArrayLike | None = None) -> int:
        """Put a document not in the delta in the next slot; returns the slot. Its vector is
        kept here, not on `doc` (which the caller passes without it)."""
        slot = len(self.docs)
        if slot == len(self.alive):
            self._grow()
        counts = Counter(terms)
        self.docs.append(doc)
        self.terms.append(counts)
        self.slot[doc.sk] = slot
        for term, count in counts.items():
            self.postings.setdefault(term, []).append((slot, count))
        self.df.update(counts.keys())
        self.alive[slot] = True
        self.created[slot] = doc.created_at
        self.ttl[slot] = np.inf if doc.ttl is None else doc.ttl
        self.length[slot] = len(terms)
        self.previous[slot] = -1
        if vector is not None and self.dimension:
            self.vectors.put(slot, vector)
            self.has_vector[slot] = True
        return slot

    def remove(self, sk: str) -> Doc | None:
        """Kill a document's slot; the document, or None if the delta did not hold it."""
        slot = self.slot.pop(sk, None)
        if slot is None:
            return None
        doc, counts = self.docs[slot], self.terms[slot]
        assert doc is not None
        assert counts is not None
        self.docs[slot] = self.terms[slot] = None
        self.alive[slot] = False
        self.has_vector[slot] = False
        for term in counts:  # its postings stay, masked by `alive`
            self.df[term] -= 1
            if self.df[term] == 0:
                del self.df[term]
        return doc

    def present(self, now: float) -> Mask:
        """Slots of live documents not expired at `now`."""
        n = self.used
        return self.alive[:n] & (self.ttl[:n] > now)

    def admitted(self, key: Hashable, admits: Callable[[Doc], bool]) -> Mask:
        """Slots whose document `admits` accepts (dead ones never), `key` naming the test."""
        n = self.used
        known = self._verdicts.pop(key, np.zeros(0, dtype=np.bool_))
        if len(known) < n:
            new = (d is not None and admits(d) for d in self.docs[len(known) : n])
            known = np.concatenate([known, np.fromiter(new, np.bool_, n - len(known))])
        self._verdicts[key] = known
        if len(self._verdicts) > KEPT_FILTERS:
            self._verdicts.popitem(last=False)
        return known & self.alive[:n]

    def cosines(self, vector: Vector) -> Floats:
        return self.vectors.cosines(vector, self.used)

    def vector(self, slot: int) -> Vector | None:
        """The vector of a live slot, as held (quantized)."""
        return self.vectors.vector(slot) if self.has_vector[slot] else None

    def bm25(self, terms: list[str], idf: list[float], k1: float, b: float, avgdl: float) -> Floats:
        """BM25 of every slot for these terms and their idf, term after term (the order the
        per-document formula adds them in, so the sums are the same)."""
        n = self.used
        scores = np.zeros(n, dtype=np.float64)
        norm = k1 * (1 - b + b * self.length[:n] / max(avgdl, 1e-9))
        for term, weight in zip(terms, idf, strict=True):
            found = self.postings.get(term)
            if not found or weight == 0.0:
                continue
            slots = np.fromiter((s for s, _ in found), np.int64, len(found))
            tf = np.fromiter((c for _, c in found), np.float64, len(found))
            scores[slots] += weight * tf / (tf + norm[slots])
        return np.where(self.alive[:n], scores, 0.0)

    def _grow(self) -> None:
        capacity = 2 * len(self.alive)

        def grown(a: npt.NDArray[Any], fill: float | bool | int) -> npt.NDArray[Any]:
            bigger = np.full((capacity, *a.shape[1:]), fill, dtype=a.dtype)
            bigger[: len(a)] = a
            return bigger

        self.alive = grown(self.alive, False)
        self.created = grown(self.created, 0.0)
        self.ttl = grown(self.ttl, np.inf)
        self.length = grown(self.length, 0.0)
        self.has_vector = grown(self.has_vector, False)
        self.previous = grown(self.previous, -1)
        self.vectors = self.vectors.grown(capacity)
