"""The delta of an agent's index, scored as arrays: documents written since the last build
rank as they would in a rebuilt index (by meaning), score words with the main segment's
frequencies (as the one-by-one code did), and keep their place through rewrites and
removals."""

import math
from collections import Counter

import numpy as np
import pytest

from api.embeddings.base import Embedder
from api.search import delta as delta_module
from api.search import index as index_module
from api.search import tokens
from api.search.documents import Doc
from api.search.index import AgentIndex, Filters, Mode, Query

WORDS = [
    "coffee",
    "tea",
    "race",
    "curry",
    "garden",
    "dog",
    "cat",
    "paris",
    "berlin",
    "piano",
    "book",
    "film",
]
Ranked = tuple[str, float, float | None]  # sort key, score, similarity
QUERIES = ["coffee in paris", "the dog and the cat", "piano book", "race curry garden"]


def _docs(embedder: Embedder, start: int, count: int, *, conversations: int = 3) -> list[Doc]:
    texts = [
        " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(1 + i % 5)) + f" note {i}"
        for i in range(start, start + count)
    ]
    # Multiples of 1/64: every dot product is exact in float32 whatever the order of its
    # sums, so equal documents tie exactly in the main segment and in the delta alike.
    vectors = [(np.round(v * 64) / 64).astype(np.float32) for v in embedder.embed(texts)]
    return [
        Doc(
            sk=f"Recall#{i:08d}",
            kind="message",
            text=text,
            created_at=float(i),
            item_id=str(i),
            vector=vector,
            conversation_id=f"c{i % conversations}" if conversations else None,
            role="user" if i % 2 else "assistant",
        )
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True), start)
    ]


def _query(embedder: Embedder, text: str, mode: Mode) -> Query:
    vector = (np.round(embedder.embed([text])[0] * 64) / 64).astype(np.float32)
    return Query(terms=tokens.tokenize(text), vector=vector, mode=mode, min_similarity=0.1)


def _ranking(index: AgentIndex, query: Query, filters: Filters | None = None) -> list[Ranked]:
    found = index.search(query, filters or Filters(), now=0.0, offset=0, limit=1000)
    return [(h.doc.sk, h.score, h.similarity) for h in found.hits]


def _same(got: list[Ranked], want: list[Ranked]) -> None:
    assert [sk for sk, _, _ in got] == [sk for sk, _, _ in want]
    assert [s for _, s, _ in got] == pytest.approx([s for _, s, _ in want], rel=1e-9)
    assert [c for _, _, c in got] == pytest.approx([c for _, _, c in want], rel=1e-6)


def test_the_delta_ranks_by_meaning_as_a_rebuilt_index(static: Embedder) -> None:
    index = AgentIndex(_docs(static, 0, 50), version=0, dimension=static.dimension)
    # Past the delta's first arrays (they grow), with a rewrite and removals among them.
    written = _docs(static, 50, 3 * delta_module.FIRST_CAPACITY)
    for doc in written:
        index.upsert(doc)
    rewritten = _docs(static, 500, 1)[0]
    rewritten.sk, rewritten.created_at = written[10].sk, written[10].created_at
    index.upsert(rewritten)
    for doc in written[20:25]:  # messages of the delta that others followed
        index.remove(doc.sk)
    assert index._delta.used > delta_module.FIRST_CAPACITY
    assert len(index._delta) == len(written) - 5

    scratch = AgentIndex(index.docs(), version=0, dimension=static.dimension)
    assert len(scratch._delta) == 0
    for text in QUERIES:
        for filters in (Filters(), Filters(roles=frozenset({"user"}))):
            want = _ranking(scratch, _query(static, text, "semantic"), filters)
            assert want  # the comparison means something
            _same(_ranking(index, _query(static, text, "semantic"), filters), want)


def test_the_delta_scores_words_with_the_main_segments_frequencies(static: Embedder) -> None:
    # Outside conversations: no message takes a share of the score of the one before it.
    main = _docs(static, 0, 40, conversations=0)
    index = AgentIndex(main, version=0, dimension=static.dimension)
    written = _docs(static, 40, 30, conversations=0)
    written[0].text = "zeppelin coffee coffee"  # a word no main document holds
    written[1].text = "zeppelin"
    written[2].text = "zeppelin gone"
    for doc in written:
        index.upsert(doc)
    index.remove(written[2].sk)  # no longer counted among the delta's frequencies

    df = Counter(t for d in main for t in set(tokens.tokenize(d.text)))
    live = [d for d in written if d.sk != written[2].sk]
    delta_df = Counter(t for d in live for t in set(tokens.tokenize(d.text)))
    avgdl = sum(len(tokens.tokenize(d.text)) for d in main) / len(main)

    def bm25(doc: Doc, terms: list[str]) -> float:
        """BM25 as the one-by-one code scored a delta document (bm25s's lucene idf)."""
        counts, length, score = Counter(tokens.tokenize(doc.text)), 0, 0.0
        length = sum(counts.values())
        for term in dict.fromkeys(terms):
            n, found = len(main), df[term]
            if found == 0:
                n, found = len(main) + len(live), delta_df[term]
            if found and counts[term]:
                idf = math.log(1 + (n - found + 0.5) / (found + 0.5))
                norm = index_module.K1 * (
                    1 - index_module.B + index_module.B * length / max(avgdl, 1e-9)
                )
                score += idf * counts[term] / (counts[term] + norm)
        return score

    for text in [*QUERIES, "zeppelin coffee", "zeppelin"]:
        query = _query(static, text, "lexical")
        scores = {sk: s for sk, s, _ in _ranking(index, query)}
        want = {d.sk: round(bm25(d, query.terms), 5) for d in live if bm25(d, query.terms) > 0}
        got = {sk: s for sk, s in scores.items() if int(sk.split("#")[1]) >= 40}
        assert got.keys() == want.keys()
        assert got == pytest.approx(want, abs=1e-9)
    gone = _ranking(index, _query(static, "gone", "lexical"))
    assert written[2].sk not in {sk for sk, _, _ in gone}


def test_a_message_of_the_delta_comes_with_its_neighbours_not_as_matches(
    static: Embedder,
) -> None:
    index = AgentIndex([], version=0, dimension=static.dimension)
    question, before, answer = _docs(static, 0, 3, conversations=1)
    question.text, before.text, answer.text = "How was the race?", "hmm", "We had a curry"
    for doc in (question, before, answer):
        index.upsert(doc)
    query = _query(static, "race", "lexical")

    def found() -> list[tuple[str, str | None, str | None]]:
        hits = index.search(query, Filters(), now=0.0, offset=0, limit=10).hits
        return [
            (h.doc.sk, h.before.sk if h.before else None, h.after.sk if h.after else None)
            for h in hits
        ]

    # Only the question matches; the message after it comes with it, as its context.
    assert found() == [(question.sk, None, before.sk)]
    index.remove(before.sk)  # now the answer follows the question
    assert found() == [(question.sk, None, answer.sk)]


def test_context_moves_a_match_up_among_matches(static: Embedder) -> None:
    index = AgentIndex([], version=0, dimension=static.dimension)
    question, reply, alone = _docs(static, 0, 3, conversations=1)
    alone.conversation_id = "elsewhere"
    question.text, reply.text, alone.text = "race marathon relay", "race", "marathon"
    for doc in (question, reply, alone):
        index.upsert(doc)
    ranked = [sk for sk, _, _ in _ranking(index, _query(static, "race marathon relay", "lexical"))]
    # The reply and the newer "marathon" match one word each, but the reply takes half of
    # the question's score before it.
    assert ranked == [question.sk, reply.sk, alone.sk]


def test_the_filters_of_a_search_see_documents_written_after_it(static: Embedder) -> None:
    index = AgentIndex(_docs(static, 0, 10), version=0, dimension=static.dimension)
    users = Filters(roles=frozenset({"user"}))
    query = _query(static, "note", "lexical")  # a word of every document
    first = _docs(static, 10, 10)
    for doc in first:
        index.upsert(doc)
    before = {sk for sk, _, _ in _ranking(index, query, users)}
    later = _docs(static, 20, 10)
    for doc in later:
        index.upsert(doc)
    index.remove(first[1].sk)
    after = {sk for sk, _, _ in _ranking(index, query, users)}
    assert first[1].sk in before
    assert first[1].sk not in after
    assert after - before == {d.sk for d in later if d.role == "user" and d.sk in after}
    assert any(d.sk in after for d in later)
    assert all(int(sk.split("#")[1]) % 2 for sk in after)  # users only, new ones included


def test_one_document_rewritten_over_and_over_ends_in_a_rebuild(static: Embedder) -> None:
    index = AgentIndex(_docs(static, 0, 5), version=0, dimension=static.dimension)
    doc = _docs(static, 5, 1)[0]
    for _ in range(2 * index_module.DELTA_MIN + 1):
        index.upsert(doc)
    assert len(index._delta) == 1
    assert index.needs_rebuild()  # its dead slots count
    index.rebuild()
    assert index._delta.used == 0
    found = index.search(_query(static, doc.text, "lexical"), Filters(), now=0, offset=0, limit=10)
    assert [h.doc.sk for h in found.hits].count(doc.sk) == 1


def test_a_messages_metadata_counts_in_the_delta_as_in_the_main_segment() -> None:
    def message(sk: str, metadata: object) -> Doc:
        size = 0 if metadata is None else 5000
        return Doc(
            sk=sk, kind="message", text="hello", created_at=1.0, item_id=sk,
            metadata=metadata, metadata_bytes=size,
        )  # fmt: skip

    index = AgentIndex([message("a", None)], version=1, dimension=None)
    before = index.nbytes()
    index.upsert(message("b", {"big": "x" * 800}))
    written = index.nbytes() - before
    assert written >= 5000  # the metadata is counted while the doc is in the delta...
    index.rebuild()
    assert index.nbytes() - before >= 5000  # ...and once it is in the main segment
