"""Archival memories that stop being true: explicit and automatic supersession, recall that
answers "now" by default, "then" when the question is about the past, and `as_of`."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from api.embeddings.factory import get_embedding_backend
from api.kit.clock import FrozenClock
from api.memory import archival
from api.memory.errors import AlreadySuperseded, ArchivalMemoryNotFound, InvalidSupersession
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.search.repository import SearchRepository
from api.store.table import Table
from tests.memory.conftest import AGENT

DAY = 86_400.0


@pytest.fixture
def engine(store: Table, clock: FrozenClock) -> SearchEngine:
    return SearchEngine(SearchRepository(store), get_embedding_backend("static"), clock)


async def _say(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock, text: str, **kw: object
) -> archival.ArchivalInsert:
    clock.advance(30 * DAY)
    return await archival.insert(repos, engine, AGENT, text, **kw)  # type: ignore[arg-type]


def _texts(page: archival.SearchPage) -> list[str]:
    return [m.content for m in page.memories]


async def test_a_new_value_of_an_attribute_replaces_the_old(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    lisbon = await _say(repos, engine, clock, "Lives in: Lisbon")
    porto = await _say(repos, engine, clock, "Lives in: Porto")
    assert [m.memory_id for m in porto.replaced] == [lisbon.memory.memory_id]
    old = porto.replaced[0]
    assert old.superseded_by == porto.memory.memory_id
    assert old.superseded_at == porto.memory.created_at
    stored = await archival.get_memory(repos, AGENT, lisbon.memory.memory_id)
    assert stored.superseded_by == porto.memory.memory_id  # kept, ended, not deleted

    for mode in ("hybrid", "lexical", "semantic"):
        now = await archival.search(engine, AGENT, "where do I live", mode=mode)
        assert _texts(now) == ["Lives in: Porto"], mode
        before = await archival.search(engine, AGENT, "where did I live before", mode=mode)
        assert _texts(before)[0] == "Lives in: Lisbon", mode
        everything = await archival.search(
            engine,
            AGENT,
            "where do I live",
            mode=mode,
            include_history=True,
        )
        assert sorted(_texts(everything)) == ["Lives in: Lisbon", "Lives in: Porto"], mode

    then = lisbon.memory.created_at + timedelta(days=1)
    at_then = await archival.search(engine, AGENT, "where do I live", as_of=then)
    assert _texts(at_then) == ["Lives in: Lisbon"]
    before_any = lisbon.memory.created_at - timedelta(days=1)
    assert _texts(await archival.search(engine, AGENT, "where do I live", as_of=before_any)) == []


async def test_a_sentence_replaces_a_line_and_a_year_finds_what_held_then(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    clock.set(datetime(2024, 3, 1, tzinfo=UTC).timestamp())
    first = await archival.insert(repos, engine, AGENT, "Works at: Acme Corp")
    clock.set(datetime(2025, 6, 1, tzinfo=UTC).timestamp())
    second = await archival.insert(repos, engine, AGENT, "I work at Globex now")
    assert [m.memory_id for m in second.replaced] == [first.memory.memory_id]
    clock.set(datetime(2026, 1, 10, tzinfo=UTC).timestamp())
    found = await archival.search(engine, AGENT, "where did I work in 2024?")
    assert _texts(found)[0] == "Works at: Acme Corp"
    assert _texts(await archival.search(engine, AGENT, "where do I work?")) == [
        "I work at Globex now"
    ]


async def test_what_is_not_one_attribute_is_never_replaced(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    pairs = [
        ("My friend Anna lives in Paris", "My friend Tom lives in Rome"),
        ("Likes: pizza", "Likes: sushi"),
        ("My sister works at Google", "I work at Acme"),
        ("I live in Lisbon", "I don't live in Porto any more"),
        ("Meeting moved to Friday", "Standup moved to 10am"),
    ]
    for older, newer in pairs:
        await _say(repos, engine, clock, older)
        assert (await _say(repos, engine, clock, newer)).replaced == [], newer
    moved = await _say(repos, engine, clock, "I moved to Porto")
    assert [m.content for m in moved.replaced] == ["I live in Lisbon"]
    # The same value said another way replaces nothing; another value replaces both.
    assert (await _say(repos, engine, clock, "Lives in: Porto")).replaced == []
    replaced = await _say(repos, engine, clock, "Lives in: Porto, Portugal")
    assert sorted(m.content for m in replaced.replaced) == ["I moved to Porto", "Lives in: Porto"]


async def test_automatic_replacement_can_be_turned_off(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    await _say(repos, engine, clock, "Lives in: Lisbon")
    porto = await _say(repos, engine, clock, "Lives in: Porto", automatic=False)
    assert porto.replaced == []
    found = await archival.search(engine, AGENT, "where do I live", mode="lexical")
    assert sorted(_texts(found)) == ["Lives in: Lisbon", "Lives in: Porto"]


async def test_an_older_date_is_history_at_once(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    porto = await _say(repos, engine, clock, "Lives in: Porto")
    lisbon = await _say(
        repos,
        engine,
        clock,
        "Lives in: Lisbon",
        valid_from=porto.memory.created_at - timedelta(days=400),
    )
    assert lisbon.replaced == []
    assert lisbon.memory.superseded_by == porto.memory.memory_id
    assert lisbon.memory.superseded_at == porto.memory.valid_since
    assert _texts(await archival.search(engine, AGENT, "where do I live")) == ["Lives in: Porto"]


async def test_explicit_supersession_and_its_refusals(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    note = await _say(repos, engine, clock, "Parking spot is B12 on level -2")
    moved = await _say(
        repos, engine, clock, "Parking moved to C3", supersedes=[note.memory.memory_id]
    )
    assert [m.memory_id for m in moved.replaced] == [note.memory.memory_id]
    again = await _say(
        repos, engine, clock, "Parking is now D4", supersedes=[note.memory.memory_id]
    )
    assert again.replaced == []  # replaced already: said, and the new memory is kept
    assert [m.superseded_by for m in again.not_replaced] == [moved.memory.memory_id]
    with pytest.raises(ArchivalMemoryNotFound):
        await _say(repos, engine, clock, "Something else", supersedes=["0" * 32])
    with pytest.raises(ArchivalMemoryNotFound):
        await archival.supersede(
            repos, engine, "another-agent", moved.memory.memory_id, again.memory.memory_id
        )
    with pytest.raises(InvalidSupersession):
        await archival.supersede(
            repos, engine, AGENT, moved.memory.memory_id, moved.memory.memory_id
        )
    with pytest.raises(InvalidSupersession):  # a replaced memory replaces nothing
        await archival.supersede(
            repos, engine, AGENT, again.memory.memory_id, note.memory.memory_id
        )
    ended = await archival.supersede(
        repos, engine, AGENT, moved.memory.memory_id, again.memory.memory_id
    )
    assert ended.superseded_by == again.memory.memory_id
    with pytest.raises(AlreadySuperseded):
        await archival.supersede(
            repos, engine, AGENT, moved.memory.memory_id, again.memory.memory_id
        )


async def test_of_two_writers_replacing_one_memory_exactly_one_does(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    old = await _say(repos, engine, clock, "Desk: 4th floor, by the window")
    a = await _say(repos, engine, clock, "Desk on the 2nd floor")
    b = await _say(repos, engine, clock, "Desk on the 3rd floor")
    results = await asyncio.gather(
        archival.supersede(repos, engine, AGENT, old.memory.memory_id, a.memory.memory_id),
        archival.supersede(repos, engine, AGENT, old.memory.memory_id, b.memory.memory_id),
        return_exceptions=True,
    )
    won = [r for r in results if not isinstance(r, BaseException)]
    lost = [r for r in results if isinstance(r, AlreadySuperseded)]
    assert len(won) == 1
    assert len(lost) == 1
    stored = await archival.get_memory(repos, AGENT, old.memory.memory_id)
    assert stored.superseded_by == won[0].superseded_by


async def test_a_text_true_again_is_stored_anew(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    lisbon = await _say(repos, engine, clock, "Lives in: Lisbon")
    await _say(repos, engine, clock, "Lives in: Porto")
    back = await _say(repos, engine, clock, "lives in: lisbon")
    assert back.created
    assert back.memory.memory_id != lisbon.memory.memory_id
    assert [m.content for m in back.replaced] == ["Lives in: Porto"]
    assert _texts(await archival.search(engine, AGENT, "where do I live")) == ["lives in: lisbon"]
    assert not (await _say(repos, engine, clock, "Lives in: Lisbon")).created
