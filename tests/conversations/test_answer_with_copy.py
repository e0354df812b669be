"""A turn's answer and its searchable copy are written in one transaction when its vector
comes at once; otherwise (a slow embedder), or in a conversation being deleted, as any
other message is: the answer first, its copy after it or not at all."""

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from api.agents import service as agents
from api.agents.schemas import AgentCreate
from api.conversations import repository as conversations_repository
from api.conversations import service as conversations
from api.conversations.models import Conversation
from api.embeddings.base import Embedder, Vectors
from api.embeddings.factory import get_embedding_backend
from api.kit.clock import FrozenClock
from api.messages import repository
from api.messages import service as message_service
from api.messages.models import Message
from api.search.engine import SearchEngine
from api.store.definition import load_definition
from api.store.rounds import WRITES, Call, RoundCounter
from api.store.sqlite import SqliteTable
from api.store.table import ConditionFailed
from tests.fakes.embedders import DelegatingEmbedder

EMAIL = "ada@example.com"


@dataclass
class Setting:
    counter: RoundCounter
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
            self.search, EMAIL, self.conversation.agent_id, message
        )
        if copying is not None:
            await copying

    async def stored(self) -> list[tuple[str, bool]]:
        found, _ = await repository.oldest_first(
            self.counter, self.conversation.conversation_id, limit=10, cursor=None
        )
        return [(m.content, m.interrupted) for m in found]

    async def copies(self) -> list[str]:
        found = await message_service.newest(self.counter, self.conversation.agent_id, limit=10)
        return [m.content for m in found]


class GatedEmbedder(DelegatingEmbedder):
    """The shipped static model, answering only once `gate` is open: an embedder slower
    than the answer waits for."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.gate = asyncio.Event()
        self.gate.set()

    async def embed_async(self, texts: Sequence[str]) -> Vectors:
        await self.gate.wait()
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
    await table.create()
    counter = RoundCounter(table)
    agent, _ = await agents.create(table, EMAIL, AgentCreate(name="Kit"), clock)
    conversation = await conversations.create(table, agent, "", clock)
    yield Setting(counter, SearchEngine(counter, embedder, clock), conversation)
    await table.close()


def writes(calls: list[Call]) -> list[str]:
    return [c.operation for c in calls if c.operation in WRITES]


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
        setting.search, EMAIL, setting.conversation.agent_id, setting.answer()
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
    await conversations_repository.mark_deleting(setting.counter, setting.conversation)
    await setting.store(setting.answer())
    assert await setting.stored() == [("The answer is 42.", False)]
    assert await setting.copies() == []


async def test_an_answer_stored_already_is_refused_as_any_message_is(setting: Setting) -> None:
    await setting.store(setting.answer())
    with pytest.raises(ConditionFailed):
        await setting.store(setting.answer("Another answer"))
    assert await setting.stored() == [("The answer is 42.", False)]
    assert await setting.copies() == ["The answer is 42."]
