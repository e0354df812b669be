"""The journal writes a run's events in batches (every FLUSH_SECONDS or FLUSH_EVENTS), keeps
what a failed write did not store for the next one, and a reader that finds the run's
process gone ends the run as interrupted."""

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from api.conversations.messages import repository as messages
from api.conversations.messages.models import Message
from api.journal import journal as journal_module
from api.journal import reader as service
from api.journal.bus import RunBus
from api.journal.journal import FLUSH_EVENTS, RunJournal
from api.journal.models import Run
from api.journal.repository import JournalRepository
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.store.definition import load_definition
from api.store.keys import ENTITY, RUN_EVENTS
from api.store.rounds import RoundCounter
from api.store.sqlite import SqliteTable
from api.store.table import Put, StoreError, Throttled, TxOp


def new_run(clock: FrozenClock, run_id: str = "r1") -> Run:
    return Run(
        run_id=run_id,
        user_email="ada@example.com",
        agent_id="a1",
        conversation_id="c1",
        created_at=datetime.fromtimestamp(clock.now(), UTC),
    )


async def stored_numbers(table: SqliteTable, run_id: str = "r1") -> list[int]:
    batches, _ = await JournalRepository(table).read_from(run_id, 1)
    return [e.number for b in batches for e in b.numbered()]


@pytest.fixture
async def table(tmp_path: Path, clock: FrozenClock) -> SqliteTable:
    table = SqliteTable(
        tmp_path / "runs.db", "runs", load_definition(), clock=clock, busy_timeout_ms=50
    )
    await table.create()
    return table


def test_a_streaming_turn_writes_at_most_once_a_second() -> None:
    assert journal_module.FLUSH_SECONDS == 1.0
    assert FLUSH_EVENTS >= 200  # a fast stream's events do not add writes of their own


async def test_events_are_written_by_the_batch_or_by_the_clock(
    table: SqliteTable, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    repos = Repositories.over(table)
    monkeypatch.setattr(journal_module, "FLUSH_SECONDS", 0.3)
    monkeypatch.setattr(journal_module, "FLUSH_EVENTS", 20)
    journal = RunJournal(repos.journal, clock, new_run(clock), RunBus())
    await journal.open("run.started", "{}")
    for i in range(19):
        journal.add("text.delta", f'{{"i": {i}}}')
    await asyncio.sleep(0.05)
    assert await stored_numbers(table) == [1]  # 19 events wait for the clock...
    await asyncio.sleep(0.6)
    assert await stored_numbers(table) == list(range(1, 21))  # ...which comes
    for i in range(20):
        journal.add("text.delta", f'{{"i": {i}}}')
    await asyncio.sleep(0.1)
    assert await stored_numbers(table) == list(range(1, 41))  # 20 are written at once
    await journal.close("completed")
    _, run = await repos.journal.read_from("r1", 1)
    assert run is not None
    assert run.state == "completed"


async def test_what_a_failed_write_did_not_store_goes_with_the_next(
    table: SqliteTable,
    clock: FrozenClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repos = Repositories.over(table)
    monkeypatch.setattr(journal_module, "FLUSH_EVENTS", 20)
    journal = RunJournal(repos.journal, clock, new_run(clock), RunBus())
    await journal.open("run.started", "{}")
    blocker = sqlite3.connect(tmp_path / "runs.db", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another process holds the database
    for i in range(20):
        journal.add("text.delta", f'{{"i": {i}}}')
    await asyncio.sleep(0.2)  # the write was tried and failed
    assert "writing events of run r1 failed" in caplog.text
    assert await stored_numbers(table) == [1]
    blocker.execute("ROLLBACK")
    blocker.close()
    journal.add("text.delta", '{"i": 20}')
    await journal.close("completed")
    assert await stored_numbers(table) == list(range(1, 23))


def answer(clock: FrozenClock, content: str) -> Message:
    return Message(
        conversation_id="c1",
        message_id="m1",
        role="assistant",
        content=content,
        created_at=datetime.fromtimestamp(clock.now(), UTC),
    )


async def test_events_and_the_draft_go_in_one_call_and_a_refused_draft_keeps_the_events(
    table: SqliteTable, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "FLUSH_SECONDS", 0.01)
    counter = RoundCounter(table)
    repos = Repositories.over(counter)
    drafts: list[Message] = [answer(clock, "Hel")]
    journal = RunJournal(
        repos.journal, clock, new_run(clock), RunBus(), lambda: drafts.pop() if drafts else None
    )
    await journal.open("run.started", "{}")
    mark = counter.mark()
    journal.add("text.delta", "{}")
    await asyncio.sleep(0.1)
    assert [c.operation for c in counter.since(mark)] == ["put_each"]  # one call for both
    assert await stored_numbers(table) == [1, 2]
    stored = await table.get(answer(clock, "").key())
    assert stored is not None
    assert (stored["content"], stored["interrupted"]) == ("Hel", True)

    # The answer itself is stored; a draft taken before that arrives late: it is refused,
    # and the events of the same flush are written all the same, in the same call.
    await messages.MessageRepository(table).add(answer(clock, "Hello"))
    drafts.append(answer(clock, "Hell"))
    mark = counter.mark()
    journal.add("text.delta", "{}")
    await asyncio.sleep(0.1)
    assert [c.operation for c in counter.since(mark)] == ["put_each"]
    assert await stored_numbers(table) == [1, 2, 3]
    stored = await table.get(answer(clock, "").key())
    assert stored is not None
    assert (stored["content"], stored["interrupted"]) == ("Hello", False)
    await journal.close("completed")


async def test_a_draft_too_large_to_store_never_holds_the_events_back(
    table: SqliteTable,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An answer past the item size limit: its draft cannot be stored, now or later; the
    events of every flush are written all the same, and no more drafts are tried."""
    monkeypatch.setattr(journal_module, "FLUSH_SECONDS", 0.01)
    counter = RoundCounter(table)
    repos = Repositories.over(counter)
    taken: list[int] = []

    def huge_draft() -> Message:
        taken.append(1)
        return answer(clock, "x" * 500_000)

    journal = RunJournal(repos.journal, clock, new_run(clock), RunBus(), huge_draft)
    await journal.open("run.started", "{}")
    for _ in range(3):
        journal.add("text.delta", "{}")
        await asyncio.sleep(0.1)
    assert await stored_numbers(table) == [1, 2, 3, 4]  # each flush's event, at once
    assert taken == [1]  # refused once, never taken again
    assert "saving the draft of run r1 failed" in caplog.text
    assert await table.get(answer(clock, "").key()) is None
    await journal.close("completed")


async def until(done: Callable[[], Awaitable[bool]]) -> None:
    """Waits (a few seconds at most) for what the journal writes in the background."""
    for _ in range(500):
        if await done():
            return
        await asyncio.sleep(0.01)


HUGE_EVENT = '"' + "x" * 500_000 + '"'  # past the item size limit


async def test_an_event_too_large_to_store_is_dropped_and_holds_nothing_back(
    table: SqliteTable,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The refusal came from one event of the batch, not the draft: written apart, the
    others are stored under the numbers their client saw, the one that never can be is
    dropped (and logged) rather than retried forever with every later event behind it;
    the drafts go on (the answer stays saved)."""
    repos = Repositories.over(table)
    monkeypatch.setattr(journal_module, "FLUSH_SECONDS", 0.01)
    taken: list[int] = []

    def small_draft() -> Message:
        taken.append(1)
        return answer(clock, f"Hel{'l' * len(taken)}")

    journal = RunJournal(repos.journal, clock, new_run(clock), RunBus(), small_draft)
    await journal.open("run.started", "{}")
    for data in ('"a"', HUGE_EVENT, '"b"'):  # one batch
        journal.add("text.delta", data)

    async def two_flushes() -> bool:
        return await stored_numbers(table) == [1, 2, 4] and len(taken) >= 1

    await until(two_flushes)
    journal.add("text.delta", '"c"')  # a later event is not held back

    async def later() -> bool:
        return await stored_numbers(table) == [1, 2, 4, 5] and len(taken) >= 2

    await until(later)
    assert await stored_numbers(table) == [1, 2, 4, 5]
    assert len(taken) >= 2  # the draft is still taken at each flush...
    stored = await table.get(answer(clock, "").key())
    assert stored is not None  # ...and saved
    assert stored["content"].startswith("Hell")
    assert "saving the draft" not in caplog.text
    dropped = [r for r in caplog.records if "cannot be stored: dropped" in r.getMessage()]
    assert [(r.levelname, r.getMessage()) for r in dropped] == [
        ("ERROR", "event 3 (text.delta) of run r1 cannot be stored: dropped")
    ]
    await journal.close("completed")
    run = new_run(clock)
    followed = [e.number async for e in service.follow(repos, clock, RunBus(), run)]
    assert followed == [1, 2, 4, 5]


async def test_the_last_events_that_can_be_stored_are_when_one_cannot(
    table: SqliteTable, clock: FrozenClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The events left for the run's end hold one too large: the others are written
    apart, and the run ends after them."""
    repos = Repositories.over(table)
    journal = RunJournal(repos.journal, clock, new_run(clock), RunBus())
    await journal.open("run.started", "{}")
    for data in ('"a"', HUGE_EVENT, '"b"'):
        journal.add("text.delta", data)
    await journal.close("completed")
    assert await stored_numbers(table) == [1, 2, 4]
    assert "event 3 (text.delta) of run r1 cannot be stored: dropped" in caplog.text
    assert (await repos.journal.get("r1")).state == "completed"  # type: ignore[union-attr]


async def test_a_failed_write_of_events_and_draft_says_both_failed(
    table: SqliteTable, clock: FrozenClock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repos = Repositories.over(table)
    journal = RunJournal(
        repos.journal, clock, new_run(clock), RunBus(), lambda: answer(clock, "Hel")
    )
    await journal.open("run.started", "{}")
    blocker = sqlite3.connect(tmp_path / "runs.db", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another process holds the database
    try:
        journal.add("text.delta", "{}")

        async def failed() -> bool:
            return "of run r1 failed" in caplog.text

        await until(failed)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert "writing events and saving the draft of run r1 failed" in caplog.text
    await journal.close("completed")
    assert await stored_numbers(table) == [1, 2]


async def test_a_reader_ends_a_run_whose_process_is_gone(
    table: SqliteTable, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    repos = Repositories.over(table)
    monkeypatch.setattr(service, "ALIVE_CHECK_SECONDS", 0.0)
    run = new_run(clock)
    journal = RunJournal(repos.journal, clock, run, RunBus())
    await journal.open("run.started", "{}")  # and then its process died: no lease is held
    followed = [
        (e.number, e.event) async for e in service.follow(repos, clock, RunBus(), run, after=0)
    ]
    assert followed == [(1, "run.started"), (1002, "error"), (1003, "run.failed")]
    assert (await repos.journal.get("r1")).state == "interrupted"  # type: ignore[union-attr]


async def test_a_run_that_could_not_be_opened_leaves_nothing_behind(
    table: SqliteTable, clock: FrozenClock, tmp_path: Path
) -> None:
    repos = Repositories.over(table)
    journal = RunJournal(repos.journal, clock, new_run(clock), RunBus())
    blocker = sqlite3.connect(tmp_path / "runs.db", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # the store refuses the run's first write
    with pytest.raises(StoreError):
        await journal.open("run.started", "{}")
    blocker.execute("ROLLBACK")
    blocker.close()
    journal.add("error", "{}")  # the turn still ends with its error events...
    journal.add("run.failed", "{}")
    await journal.close("failed")
    assert (await table.scan()).items == []  # ...but none lies in a run that is not there


async def test_the_last_events_go_with_the_runs_end(table: SqliteTable, clock: FrozenClock) -> None:
    counter = RoundCounter(table)
    repos = Repositories.over(counter)
    journal = RunJournal(repos.journal, clock, new_run(clock), RunBus())
    await journal.open("run.started", "{}")
    mark = counter.mark()
    for i in range(3):
        journal.add("text.delta", f'{{"i": {i}}}')
    await journal.close("completed")
    assert [c.operation for c in counter.since(mark)] == ["transact_write"]  # one call
    assert await stored_numbers(table) == [1, 2, 3, 4]
    assert (await JournalRepository(table).get("r1")).state == "completed"  # type: ignore[union-attr]


class RefusingLastEvents(RoundCounter):
    """The store, throttling every transaction that carries events (the run's end with its
    last events) as DynamoDB may."""

    async def transact_write(self, ops: Sequence[TxOp]) -> None:
        if any(isinstance(op, Put) and op.item.get(ENTITY) == RUN_EVENTS for op in ops):
            raise Throttled("throttled")
        await super().transact_write(ops)


async def test_a_run_whose_last_events_cannot_be_written_still_ends(
    table: SqliteTable,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(journal_module, "FLUSH_SECONDS", 0.01)
    journal = RunJournal(
        JournalRepository(RefusingLastEvents(table)), clock, new_run(clock), RunBus()
    )
    await journal.open("run.started", "{}")
    journal.add("text.delta", "{}")
    await journal.close("completed")
    assert "ending run r1 with its last events failed" in caplog.text
    assert await stored_numbers(table) == [1]  # the last event is lost, but the run is
    # ended: a reader is not left following it
    assert (await JournalRepository(table).get("r1")).state == "completed"  # type: ignore[union-attr]
