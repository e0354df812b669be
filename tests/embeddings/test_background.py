"""Vectors made for storing, which nobody waits on, come from a thread of their own at a
lower scheduling priority, so that under load a transformer's milliseconds per text do
not delay the work someone does wait for; the vectors are the same either way."""

import asyncio
import os
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from api.conversations.messages import service as message_service
from api.conversations.messages.models import Message
from api.embeddings import base
from api.embeddings.base import BACKGROUND_NICENESS, Embedder, Vectors
from api.embeddings.factory import get_embedding_backend
from api.embeddings.onnx import OnnxEmbedder
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from tests.fakes.embedders import DelegatingEmbedder

TEXTS = ["I love pizza with extra mozzarella.", "The car needs new tyres before winter."]


def niceness() -> int:
    """The calling thread's own (Linux keeps one per thread)."""
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


class Watched(OnnxEmbedder):
    """The shipped model, noting the thread and niceness each batch ran at."""

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[tuple[str, int]] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.ran.append((threading.current_thread().name, niceness()))
        return super().embed(texts)


@pytest.fixture
async def watched() -> AsyncIterator[Watched]:
    embedder = Watched()
    yield embedder
    await embedder.aclose()


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own niceness is Linux's")
async def test_background_vectors_come_from_a_lower_priority_thread(watched: Watched) -> None:
    ours = niceness()
    urgent = await watched.embed_async(TEXTS)
    stored = await watched.embed_async(TEXTS, background=True)
    (urgent_thread, urgent_nice), (stored_thread, stored_nice) = watched.ran
    assert not urgent_thread.startswith("embed-background")
    assert urgent_nice == ours
    assert stored_thread.startswith("embed-background")
    assert stored_nice == min(ours + BACKGROUND_NICENESS, 19)
    np.testing.assert_array_equal(urgent, stored)


async def test_one_background_thread_serves_every_batch_and_closing_ends_it(
    watched: Watched,
) -> None:
    before = set(threading.enumerate())  # other embedders' (a worker's earlier tests')
    await asyncio.gather(*(watched.embed_async([t], background=True) for t in TEXTS * 3))
    assert {name for name, _ in watched.ran} == {"embed-background_0"}
    (thread,) = {t for t in set(threading.enumerate()) - before if t.name.startswith("embed-")}
    await watched.aclose()
    assert not thread.is_alive()
    # A later batch (a shutdown racing a turn's end) still gets its vectors.
    (row,) = await watched.embed_async(TEXTS[:1], background=True)
    assert float(np.linalg.norm(row)) == pytest.approx(1.0, abs=1e-3)


class Lanes(DelegatingEmbedder):
    """Notes which texts were asked for in the background."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.asked: list[tuple[str, bool]] = []

    async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        self.asked += [(t, background) for t in texts]
        return await super().embed_async(texts, background=background)


async def test_a_stored_message_is_embedded_in_the_background_and_a_search_is_not(
    tmp_path: Path, clock: FrozenClock
) -> None:
    static = get_embedding_backend("static")
    assert static is not None
    lanes = Lanes(static)
    table = SqliteTable(tmp_path / "a.db", "lanes", load_definition(), clock=clock)
    await table.create()
    search = SearchEngine(Repositories.over(table).search, lanes, clock)
    message = Message(
        conversation_id="c1",
        message_id="m1",
        role="user",
        content="My sister lives in Porto.",
        created_at=datetime.fromtimestamp(clock.now(), UTC),
    )
    await message_service.vector_of(search, message)
    await search.search("an-agent", "where does my sister live?", mode="semantic")
    assert lanes.asked == [
        ("My sister lives in Porto.", True),
        ("where does my sister live?", False),
    ]
    await table.close()


async def test_past_its_bound_the_background_queue_makes_vectors_at_once(
    watched: Watched, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that stays overloaded does not hold an ever longer queue of texts: past
    the bound, a stored text's vector is made as a search's is."""
    monkeypatch.setattr(base, "MAX_QUEUED_IN_BACKGROUND", 2)
    release = threading.Event()
    held = watched.embed

    def slow(texts: Sequence[str]) -> Vectors:
        if threading.current_thread().name.startswith("embed-background"):
            release.wait(10)
        return held(texts)

    monkeypatch.setattr(watched, "embed", slow)
    queued = [asyncio.ensure_future(watched.embed_async([t], background=True)) for t in TEXTS]
    await asyncio.sleep(0)  # both handed to the background thread
    await watched.embed_async(["past the bound"], background=True)
    assert [name.startswith("embed-background") for name, _ in watched.ran] == [False]
    release.set()
    await asyncio.gather(*queued)
    assert [name.startswith("embed-background") for name, _ in watched.ran[1:]] == [True, True]


async def test_where_a_thread_cannot_be_given_a_lower_priority_it_works_at_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(*_: object) -> None:
        raise PermissionError("not allowed here")

    monkeypatch.setattr(os, "setpriority", refused)
    embedder = Watched()
    try:
        rows = await embedder.embed_async(TEXTS, background=True)
    finally:
        await embedder.aclose()
    ((thread, nice),) = embedder.ran
    assert thread.startswith("embed-background")
    assert nice == niceness()
    assert rows.shape == (2, embedder.dimension)
