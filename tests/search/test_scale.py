"""No cap: every memory of an agent is searchable, the oldest of many included; and an index
holds each memory in little more than its text."""

import gc
import hashlib
import random
import sys
import tracemalloc
from datetime import UTC, datetime, timedelta

from api.embeddings.base import Embedder
from api.kit.clock import FrozenClock
from api.memory import archival, repository
from api.memory.models import ArchivalMemory
from api.search import documents, vectors
from api.search.engine import SearchEngine
from api.search.index import AgentIndex
from api.search.repository import SearchRepository
from api.store.table import Item, Table
from tests.search.conftest import AGENT

TOPICS = ["groceries", "meeting notes", "gym session", "weather", "train times", "recipes"]


async def test_an_agent_with_12000_memories_finds_its_oldest(
    store: Table, static: Embedder, clock: FrozenClock
) -> None:
    start = datetime(2023, 1, 1, tzinfo=UTC)
    texts = ["The spare key is hidden under the blue flowerpot by the shed."] + [
        f"Note {i} about {TOPICS[i % len(TOPICS)]} and the day's plans." for i in range(11_999)
    ]
    embedded = static.embed(texts)
    items = []
    for i, (text, vector) in enumerate(zip(texts, embedded, strict=True)):
        created = start + timedelta(minutes=i)
        memory = ArchivalMemory(
            agent_id=AGENT,
            memory_id=repository.new_memory_id(created),
            content=text,
            content_hash=hashlib.sha256(text.encode()).hexdigest(),
            created_at=created,
        )
        items.append({**memory.to_dynamo_item(), **vectors.attributes(vector, static.model_id)})
    await store.batch_write(puts=items)

    engine = SearchEngine(SearchRepository(store), static, clock)
    for mode in ("hybrid", "lexical", "semantic"):
        found = await archival.search(engine, AGENT, "where is the spare key hidden", mode=mode)
        assert found.memories[0].content == texts[0], mode
    paraphrase = await archival.search(engine, AGENT, "where did I put the house key?")
    assert paraphrase.memories[0].content == texts[0]
    listed = await archival.search(engine, AGENT, "gym", mode="lexical")
    assert listed.total == 2000


def _items(static: Embedder, texts: list[str]) -> list[Item]:
    """Archival items as archival.insert writes them."""
    start = datetime(2024, 1, 1, tzinfo=UTC)
    items = []
    for i, (text, vector) in enumerate(zip(texts, static.embed(texts), strict=True)):
        created = start + timedelta(seconds=i)
        memory = ArchivalMemory(
            agent_id=AGENT,
            memory_id=repository.new_memory_id(created),
            content=text,
            content_hash=hashlib.sha256(text.encode()).hexdigest(),
            created_at=created,
        )
        items.append({**memory.to_dynamo_item(), **vectors.attributes(vector, static.model_id)})
    return items


def _load(static: Embedder, count: int) -> tuple[AgentIndex, int]:
    """An index loaded from `count` items, as the engine loads one (the items dropped once
    parsed); and the size of its texts."""
    rng = random.Random(4)
    words = [f"{a}{b}" for a in ("tal", "mer", "os", "vin", "qua") for b in range(400)]
    texts = [" ".join(rng.sample(words, 12)) for _ in range(count)]
    text_bytes = sum(sys.getsizeof(t) for t in texts)
    docs = [documents.of_item(item, static.model_id) for item in _items(static, texts)]
    index = AgentIndex([d for d in docs if d is not None], version=0, dimension=static.dimension)
    return index, text_bytes


def test_an_index_holds_a_memory_in_about_a_kilobyte_beside_its_text(
    static: Embedder,
) -> None:
    """Live Python and numpy memory (tracemalloc) of an index loaded from table items, per
    memory, beyond its text: under 1 KB (about 720 bytes), so that with what a load leaves
    scattered a worker stays under 2 KB (bench/search.py measures that). float32 vectors
    (1 KB at 256 dimensions, where int8 takes 260 bytes) would not fit beside the rest.
    Per memory is what 6,000 memories hold more than 2,000 (an index's fixed part, about
    2 MB, is no memory's): a third of the memories traced that one index of 20,000 took."""
    # What the first use of each allocates once (the model's tables, bm25s's imports).
    AgentIndex([], version=0, dimension=static.dimension)
    static.embed(["warm"])
    (small, small_texts, _), (large, large_texts, index) = (
        _held(static, 2_000),
        _held(static, 6_000),
    )
    assert len(index) == 6_000
    assert ((large - large_texts) - (small - small_texts)) / 4_000 < 1000
    # The index's own estimate (what the engine's memory budget counts) is not far off.
    assert 0.8 < index.nbytes() / large < 1.5


def _held(static: Embedder, count: int) -> tuple[int, int, AgentIndex]:
    """What an index of `count` memories holds once loaded, the size of its texts, and
    the index."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index, text_bytes = _load(static, count)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return held, text_bytes, index
