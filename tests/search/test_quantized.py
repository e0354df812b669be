"""An index holds its vectors as int8 with a scale per row (a quarter of float32's memory):
cosines stay within a few thousandths of float32's, rankings stay the same, a document
scores the same in the main segment and in the delta, and a rebuild changes nothing."""

import numpy as np
import pytest

from api.embeddings.base import Embedder
from api.search import tokens
from api.search import vectors as vectors_module
from api.search.documents import Doc
from api.search.index import AgentIndex, Filters, Query
from api.search.vectors import Quantized

SUBJECTS = ["my sister", "the dentist", "our landlord", "the football club", "my manager"]
THINGS = ["a birthday cake", "the car insurance", "a hiking trip", "the piano lessons"]
WHEN = ["next Tuesday", "in the spring", "after work", "on the weekend"]
QUESTIONS = [
    "when is the dentist appointment",
    "what did my sister bake",
    "who handles the insurance",
    "music lessons",
    "plans for a walk in the mountains",
    "sports team news",
    "what does my boss want",
    "rent and the flat",
]


def _texts() -> list[str]:
    return [
        f"{s.capitalize()} talked about {t} {w}, note {i}."
        for i, (s, t, w) in enumerate(
            (s, t, w) for s in SUBJECTS for t in THINGS for w in WHEN for _ in range(6)
        )
    ]


def test_cosines_stay_close_and_rankings_the_same(static: Embedder) -> None:
    texts = _texts()
    exact = np.asarray(static.embed(texts), dtype=np.float32)
    held = Quantized(len(texts), static.dimension)
    held.put(slice(None), exact)
    for question in QUESTIONS:
        query = static.embed([question])[0]
        want = exact.astype(np.float64) @ query.astype(np.float64)
        got = held.cosines(query, len(texts))
        assert np.abs(got - want).max() < 0.004, question
        # The first ten are the first ten of float32 (in their order), but for documents
        # whose cosines are closer than the rounding.
        best = np.argsort(-want, kind="stable")[:10]
        ours = np.argsort(-got, kind="stable")[:10]
        for mine, theirs in zip(ours, best, strict=True):
            assert mine == theirs or abs(want[mine] - want[theirs]) < 0.004, question
        # What float32 has among its ten and ours not is at the edge, within the rounding.
        for missing in set(best) - set(ours):
            assert want[missing] - want[best[-1]] < 0.004, question


def test_quantizing_what_was_quantized_changes_nothing() -> None:
    rng = np.random.default_rng(1)
    rows = rng.standard_normal((20_000, 48)).astype(np.float32)
    rows[7] = 0.0  # a zero vector stays one
    once = Quantized(len(rows), 48)
    once.put(slice(None), rows)
    twice = Quantized(len(rows), 48)
    twice.put(slice(None), [once.vector(i) for i in range(len(rows))])
    assert np.array_equal(once.codes, twice.codes)
    assert np.array_equal(once.scales, twice.scales)
    assert not once.codes[7].any()
    assert np.abs(once.codes).max() == 127


def _doc(i: int, text: str, vector: np.ndarray) -> Doc:
    return Doc(
        sk=f"Archival#{i:06d}", kind="archival", text=text, created_at=float(i), item_id=str(i),
        vector=vector,
    )  # fmt: skip


def test_a_document_scores_the_same_in_the_delta_the_main_segment_and_after_a_rebuild(
    static: Embedder,
) -> None:
    texts = _texts()[:300]
    vectors = static.embed(texts)
    index = AgentIndex(
        [_doc(i, t, v) for i, (t, v) in enumerate(zip(texts[:200], vectors[:200], strict=True))],
        version=0,
        dimension=static.dimension,
    )
    for i in range(200, 300):
        index.upsert(_doc(i, texts[i], vectors[i]))
    # The same texts and vectors again, in the delta, under other keys.
    for i in range(100):
        index.upsert(_doc(1000 + i, texts[i], vectors[i]))
        index.upsert(_doc(2000 + i, texts[200 + i], vectors[200 + i]))

    def ranked() -> dict[str, float | None]:
        query = Query(
            terms=tokens.tokenize(QUESTIONS[0]),
            vector=static.embed([QUESTIONS[0]])[0],
            mode="semantic",
            min_similarity=-1.0,
        )
        found = index.search(query, Filters(), now=0.0, offset=0, limit=1000)
        return {h.doc.sk: h.similarity for h in found.hits}

    before = ranked()
    assert len(before) == 500
    for i in range(100):
        assert before[f"Archival#{1000 + i:06d}"] == before[f"Archival#{i:06d}"]
        assert before[f"Archival#{2000 + i:06d}"] == before[f"Archival#{200 + i:06d}"]
    index.rebuild()
    assert ranked() == before
    assert [d.vector is not None for d in index.docs()] == [True] * 500


def test_a_product_shared_between_cores_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    rows = rng.standard_normal((5000, 32)).astype(np.float32)
    held = Quantized(len(rows), 32)
    held.put(slice(None), rows)
    query = rng.standard_normal(32).astype(np.float32)
    alone = held.cosines(query, 4999)
    monkeypatch.setattr(vectors_module, "PARALLEL_ROWS", 1000)
    monkeypatch.setattr(vectors_module, "_cores", lambda: 3)
    assert np.array_equal(held.cosines(query, 4999), alone)
