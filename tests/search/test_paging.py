"""A page of results is the slice of the full ranking (best first, among equal scores newest
first, then first written), also when most scores tie: a fusion's tail, where every document
past the lists' first places shares a score, and a one-word search that scores every match
alike. The selection that finds a page without sorting everything must not change it."""

import numpy as np
import pytest

from api.search import index as index_module
from api.search import tokens
from api.search.documents import Doc
from api.search.index import AgentIndex, Filters, Query

Positions = np.ndarray


def _full(chosen: Positions, score: np.ndarray, created: np.ndarray) -> list[int]:
    """The whole ranking, sorted one by one: what every page is a slice of."""
    key = {int(i): (-score[i], -created[i], int(i)) for i in chosen}
    return sorted(key, key=key.__getitem__)


@pytest.mark.parametrize("seed", range(12))
def test_a_page_is_a_slice_of_the_full_ranking_among_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 5000
    # A few distinct scores (a fusion's tail and head), the largest group at the bottom,
    # in the middle or at the top, and times that tie too.
    values = rng.random(rng.integers(2, 6))
    weights = rng.dirichlet(np.full(len(values), 0.3))
    score = rng.choice(values, size=n, p=weights)
    score[rng.integers(0, n, 30)] = rng.random(30)  # a head of distinct scores
    created = rng.integers(0, 400, n).astype(np.float64)
    chosen = np.flatnonzero(rng.random(n) < 0.9)
    full = _full(chosen, score, created)
    for offset, limit in [(0, 10), (0, 1), (5, 10), (40, 25), (0, 300), (990, 20)]:
        page = index_module._page(chosen, score, created, offset, limit)
        assert page.tolist() == full[offset : offset + limit], (offset, limit)


def test_the_first_places_of_a_list_are_its_best_and_among_ties_its_newest() -> None:
    rng = np.random.default_rng(3)
    n = 4000
    score = np.where(rng.random(n) < 0.95, 0.5, rng.random(n))  # most of them tie
    created = rng.integers(0, 50, n).astype(np.float64)
    matched = rng.random(n) < 0.8
    ranks = index_module._ranks(score, matched, created)
    full = _full(np.flatnonzero(matched), score, created)
    depth = index_module.RANK_DEPTH
    head = full[:depth]
    assert ranks[head].tolist() == list(range(1, depth + 1))
    assert set(ranks[full[depth:]].tolist()) == {depth + 1}
    assert np.isinf(ranks[~matched]).all()


def _doc(i: int, text: str, vector: np.ndarray) -> Doc:
    return Doc(
        sk=f"Archival#{i:06d}",
        kind="archival",
        text=text,
        created_at=float(i // 3),  # three by three at once: times tie too
        item_id=str(i),
        vector=vector,
    )


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "semantic"])
def test_pages_of_a_search_where_most_scores_tie(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "RANK_DEPTH", 40)  # a tail at a small size
    rng = np.random.default_rng(9)
    dimension = 8
    base = np.ones(dimension, dtype=np.float32) / np.sqrt(dimension)
    docs = []
    for i in range(1200):
        # Nearly all resemble the question alike (one vector); a few a little more or
        # less; every one holds "zorvak", some hold "quastrel" too.
        vector = base.copy()
        if i % 97 == 0:
            vector = base + rng.normal(0, 0.2, dimension).astype(np.float32)
            vector /= np.linalg.norm(vector)
        words = "zorvak quastrel" if i % 13 == 0 else "zorvak"
        docs.append(_doc(i, f"{words} note", vector))
    index = AgentIndex(docs[:1000], version=0, dimension=dimension)
    for doc in docs[1000:]:  # some in the delta
        index.upsert(doc)
    query = Query(
        terms=tokens.tokenize("zorvak quastrel"),
        vector=base,
        mode=mode,  # type: ignore[arg-type]
        min_similarity=0.3,
    )

    def page(offset: int, limit: int) -> list[str]:
        found = index.search(query, Filters(), now=0.0, offset=offset, limit=limit)
        return [h.doc.sk for h in found.hits]

    everything = page(0, 5000)  # no selection: every match sorted
    assert len(everything) == 1200
    for offset, limit in [(0, 10), (10, 10), (35, 10), (500, 7)]:
        assert page(offset, limit) == everything[offset : offset + limit]
