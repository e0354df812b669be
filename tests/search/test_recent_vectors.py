"""A text embedded a moment ago is not embedded again: the query of a context fetch, then
the same message stored, cost the embedding backend one call. What comes from memory is
exactly what the backend gives."""

from collections.abc import Sequence

import numpy as np
import pytest

from api.embeddings.base import Embedder, Vectors
from api.kit.clock import FrozenClock
from api.memory import archival
from api.search.engine import RECENT_BATCH, SearchEngine
from api.search.recent_vectors import RecentVectors
from api.search.repository import SearchRepository
from api.store.table import Table
from tests.fakes.embedders import DelegatingEmbedder
from tests.search.conftest import AGENT


class CountingEmbedder(DelegatingEmbedder):
    """The real static model, with the texts each call asked for written down."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.calls: list[list[str]] = []

    async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        self.calls.append(list(texts))
        return await self.inner.embed_async(texts)


@pytest.fixture
def counting(static: Embedder) -> CountingEmbedder:
    return CountingEmbedder(static)


@pytest.fixture
def counted_engine(store: Table, counting: CountingEmbedder, clock: FrozenClock) -> SearchEngine:
    return SearchEngine(SearchRepository(store), counting, clock)


async def test_a_query_then_the_same_text_stored_is_embedded_once(
    counted_engine: SearchEngine, counting: CountingEmbedder, static: Embedder
) -> None:
    question = "What is my sister's name?"
    await archival.search(counted_engine, AGENT, question)
    (vector,) = await counted_engine.vectors([question])
    assert counting.calls == [[question]]
    assert vector is not None
    assert np.array_equal(vector, static.embed([question])[0])


async def test_only_the_texts_not_seen_go_to_the_backend(
    counted_engine: SearchEngine, counting: CountingEmbedder, static: Embedder
) -> None:
    await counted_engine.vectors(["hello there"])
    both = await counted_engine.vectors(["hello there", "a new text", "hello there"])
    assert counting.calls == [["hello there"], ["a new text"]]
    expected = static.embed(["hello there", "a new text", "hello there"])
    assert all(
        got is not None and np.array_equal(got, want)
        for got, want in zip(both, expected, strict=True)
    )
    await archival.search(counted_engine, AGENT, "a new text")
    assert len(counting.calls) == 2  # the query's vector came from memory too


async def test_a_kept_vector_cannot_be_changed_by_a_caller(counted_engine: SearchEngine) -> None:
    (vector,) = await counted_engine.vectors(["shared by every caller"])
    assert vector is not None
    with pytest.raises(ValueError, match="read-only"):
        vector[0] = 1.0


async def test_a_bulk_batch_is_not_kept(
    counted_engine: SearchEngine, counting: CountingEmbedder
) -> None:
    texts = [f"document {i}" for i in range(RECENT_BATCH + 1)]
    await counted_engine.vectors(texts)
    await counted_engine.vectors(texts[:1])
    assert counting.calls == [texts, texts[:1]]


async def test_a_failed_embedding_keeps_nothing(
    store: Table, static: Embedder, clock: FrozenClock
) -> None:
    class Failing(CountingEmbedder):
        async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
            self.calls.append(list(texts))
            raise RuntimeError("backend down")

    failing = Failing(static)
    engine = SearchEngine(SearchRepository(store), failing, clock)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="backend down"):
            await engine.vectors(["never kept"])
    assert failing.calls == [["never kept"], ["never kept"]]


def test_the_least_recently_used_goes_first_and_long_texts_are_not_kept() -> None:
    recent = RecentVectors(max_texts=2, max_chars=10)
    one, two, three = (np.full(4, i, dtype=np.float32) for i in (1, 2, 3))
    recent.keep("one", one)
    recent.keep("two", two)
    assert recent.get("one") is not None  # now the most recently used
    recent.keep("three", three)
    assert recent.get("two") is None
    assert np.array_equal(recent.get("one"), one)  # type: ignore[arg-type]
    assert np.array_equal(recent.get("three"), three)  # type: ignore[arg-type]
    kept = recent.keep("x" * 11, one)
    assert np.array_equal(kept, one)
    assert recent.get("x" * 11) is None
    assert len(recent) == 2
