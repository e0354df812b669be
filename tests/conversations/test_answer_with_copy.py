"""A turn's answer and its searchable copy are written in one transaction when its vector
comes at once; otherwise (a slow embedder), or in a conversation being deleted, as any
other message is: the answer first, its copy after it or not at all."""

import asyncio
import gc
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from api.agents import service as agents
from api.agents.schemas import AgentCreate
from api.conversations import repository as conversations_repository
from api.conversations import service as conversations
from api.conversations.messages import repository
from api.conversations.messages import service as message_service
from api.conversations.messages.models import Message
from api.conversations.models import Conversation
from api.embeddings.base import Embedder, Vectors
from api.embeddings.factory import get_embedding_backend
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.runtime.architectures.registry import ARCHITECTURES
from api.search.engine import SearchEngine
from api.store.definition import load_definition
from api.store.rounds import WRITES, Call, RoundCounter
from api.store.sqlite import SqliteTable
from api.store.table import Condition, ConditionFailed, Item, Throttled
from tests.fakes.embedders import DelegatingEmbedder

EMAIL = "ada@example.com"


@dataclass
class Setting:
    counter: RoundCounter
    repos: Repositories  # over `counter`
    search: SearchEngine
    conversation: Conversation

    def answer(self, content: str = "The answer is 42.") -> Message:
        return Message(
            conversation_id=self.conversation.conversation_id,
            message_id="m1",
            role="assistant",
            content=content,
            created_at=datetime(2026, 1, 1, tzinfo=UTC),
        )

    async def store(self, message: Message) -> None:
        copying = await message_service.store_answer(
            self.repos, self.search, EMAIL, self.conversation.agent_id, message
        )
        if copying is not None:
            await copying

    async def stored(self) -> list[tuple[str, bool]]:
        found, _ = await self.repos.messages.oldest_first(
            self.conversation.conversation_id, limit=10, cursor=None
        )
        return [(m.content, m.interrupted) for m in found]

    async def copies(self) -> list[str]:
        found = await message_service.newest(self.repos, self.conversation.agent_id, limit=10)
        return [m.content for m in found]


class GatedEmbedder(DelegatingEmbedder):
    """The shipped static model, answering only once `gate` is open: an embedder slower
    than the answer waits for. Counts the calls cancelled while they waited; fails once
    the gate opens if told to."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.gate = asyncio.Event()
        self.gate.set()
        self.cancelled = 0
        self.fail = False

    async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        if self.fail:
            raise RuntimeError("the embedder failed")
        return await self.inner.embed_async(texts)


@pytest.fixture
async def embedder() -> GatedEmbedder:
    static = get_embedding_backend("static")
    assert static is not None
    # Loaded now: the shipped model loads on the first text embedded, which could take
    # longer than the answer's wait for its vector on a busy machine.
    await static.embed_async(["warm"])
    return GatedEmbedder(static)


@pytest.fixture
async def setting(
    tmp_path: Path, clock: FrozenClock, embedder: GatedEmbedder
) -> AsyncIterator[Setting]:
    table = SqliteTable(tmp_path / "a.db", "answers", load_definition(), clock=clock)
    repos = Repositories.over(table)
    await table.create()
    counter = RoundCounter(table)
    agent, _ = await agents.create(
        repos, EMAIL, AgentCreate(name="Kit"), clock, architectures=ARCHITECTURES
    )
    conversation = await conversations.create(repos, agent, "", clock)
    counted = Repositories.over(counter)
    yield Setting(counter, counted, SearchEngine(counted.search, embedder, clock), conversation)
    await table.close()


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer waits for its vector long enough that a busy machine's embedder still
    answers in time: the one transaction does not hang on how fast the test runs."""
    monkeypatch.setattr(message_service, "ANSWER_WAITS_FOR_VECTOR_SECONDS", 10.0)


def writes(calls: list[Call]) -> list[str]:
    return [c.operation for c in calls if c.operation in WRITES]


@pytest.mark.usefixtures("patient")
async def test_the_answer_and_its_copy_are_one_transaction(setting: Setting) -> None:
    mark = setting.counter.mark()
    await setting.store(setting.answer())
    assert writes(setting.counter.since(mark)) == ["transact_write"]
    assert await setting.stored() == [("The answer is 42.", False)]
    assert await setting.copies() == ["The answer is 42."]


async def test_the_answer_replaces_its_draft(setting: Setting) -> None:
    await setting.counter.put_each([repository.draft_put(setting.answer("The ans"))])
    assert await setting.stored() == [("The ans", True)]
    await setting.store(setting.answer())
    assert await setting.stored() == [("The answer is 42.", False)]


async def test_a_slow_vector_makes_it_two_writes(setting: Setting, embedder: GatedEmbedder) -> None:
    embedder.gate.clear()  # the vector does not come while the answer waits for it
    mark = setting.counter.mark()
    copying = await message_service.store_answer(
        setting.repos, setting.search, EMAIL, setting.conversation.agent_id, setting.answer()
    )
    assert copying is not None
    assert writes(setting.counter.since(mark)) == ["put"]  # the answer, stored without it
    assert await setting.stored() == [("The answer is 42.", False)]
    embedder.gate.set()
    await copying
    assert writes(setting.counter.since(mark)) == ["put", "transact_write"]
    assert await setting.copies() == ["The answer is 42."]


async def test_in_a_conversation_being_deleted_the_answer_is_kept_without_a_copy(
    setting: Setting,
) -> None:
    await conversations_repository.ConversationRepository(setting.counter).mark_deleting(
        setting.conversation
    )
    await setting.store(setting.answer())
    assert await setting.stored() == [("The answer is 42.", False)]
    assert await setting.copies() == []


@pytest.mark.usefixtures("patient")
async def test_an_answer_stored_already_is_refused_as_any_message_is(setting: Setting) -> None:
    await setting.store(setting.answer())
    mark = setting.counter.mark()
    with pytest.raises(ConditionFailed):
        await setting.store(setting.answer("Another answer"))
    assert writes(setting.counter.since(mark)) == ["transact_write"]  # refused, once
    assert await setting.stored() == [("The answer is 42.", False)]
    assert await setting.copies() == ["The answer is 42."]


class ThrottledPuts(RoundCounter):
    """The store, throttling every single put as DynamoDB may."""

    async def put(self, item: Item, *, condition: Condition | None = None) -> None:
        raise Throttled("throttled")


async def test_an_answer_that_cannot_be_written_leaves_no_vector_unawaited(
    setting: Setting, embedder: GatedEmbedder, clock: FrozenClock
) -> None:
    """The vector was still coming when the answer was written alone, and that write
    failed: the vector's task is cancelled, not left to fail with nobody to see it."""
    unseen: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: unseen.append(context))
    try:
        embedder.gate.clear()
        throttled = Repositories.over(ThrottledPuts(setting.counter.table))
        search = SearchEngine(throttled.search, embedder, clock)
        with pytest.raises(Throttled):
            await message_service.store_answer(
                throttled,
                search,
                EMAIL,
                setting.conversation.agent_id,
                setting.answer(),
            )
        embedder.fail = True  # had it gone on, it would have failed now
        embedder.gate.set()
        for _ in range(5):
            await asyncio.sleep(0)
        gc.collect()
        assert embedder.cancelled == 1
        assert unseen == []
    finally:
        loop.set_exception_handler(None)
