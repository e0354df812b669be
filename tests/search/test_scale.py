"""No cap: every memory of an agent is searchable, the oldest of many included."""

import hashlib
from datetime import UTC, datetime, timedelta

from api.embeddings.base import Embedder
from api.kit.clock import FrozenClock
from api.memory import archival, repository
from api.memory.models import ArchivalMemory
from api.search import vectors
from api.search.engine import SearchEngine
from api.store.table import Table
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

    engine = SearchEngine(store, static, clock)
    for mode in ("hybrid", "lexical", "semantic"):
        found = await archival.search(engine, AGENT, "where is the spare key hidden", mode=mode)
        assert found.memories[0].content == texts[0], mode
    paraphrase = await archival.search(engine, AGENT, "where did I put the house key?")
    assert paraphrase.memories[0].content == texts[0]
    listed = await archival.search(engine, AGENT, "gym", mode="lexical")
    assert listed.total == 2000
