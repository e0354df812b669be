"""A run's journal: its events written to the table as they happen, in batches (every
FLUSH_SECONDS or every FLUSH_EVENTS events, whichever comes first), together with the
draft of the answer being streamed. A client that lost its stream reads them back on any
replica; a process killed mid-answer leaves what its client saw, marked as cut off."""

import asyncio
import logging
from collections.abc import Callable

from api.conversations.messages import repository as messages
from api.conversations.messages.models import Message
from api.journal import repository
from api.journal.bus import RunBus
from api.journal.closing import Closing
from api.journal.models import Run, RunEvents, RunState, Sources
from api.journal.process import this_process
from api.journal.repository import JournalRepository
from api.kit.clock import Clock
from api.store.table import InvalidItem, ItemTooLarge, Put, StoreError, TxOp

log = logging.getLogger(__name__)

# At most one write a second while a turn streams, each with the answer's draft: what a
# kill -9 can lose is at most a second of text its client was shown. A turn that ends
# within the second writes its events only with its end. FLUSH_EVENTS bounds what waits.
FLUSH_SECONDS = 1.0
FLUSH_EVENTS = 500
CLOSING_ATTEMPTS = 3  # writes of the last events before the run ends without them


def no_draft() -> Message | None:
    return None


class RunJournal:
    def __init__(
        self,
        runs: JournalRepository,
        clock: Clock,
        run: Run,
        bus: RunBus,
        draft: Callable[[], Message | None] = no_draft,
    ) -> None:
        self.runs = runs
        self.clock = clock
        self.run = run
        self.bus = bus
        self.draft = draft  # what the answer has that no draft has saved yet, if anything
        self._pending: list[list[str]] = []
        self._next = 1  # the number of the first pending event
        self._timer: asyncio.TimerHandle | None = None
        self._writing: asyncio.Task[None] | None = None
        self._opened = False
        self.closed = False  # ended: later events are not kept

    async def open(self, event: str, data: str) -> None:
        """The run exists with its first event (a reader may ask for it) once this returns."""
        await self.runs.open_run(self.run, self._first(event, data), this_process())
        self._opened = True

    def opening(self, event: str, data: str) -> list[TxOp]:
        """The writes that open the run with its first event, for the caller to make in a
        transaction it makes anyway (a turn's: the user's message's), saving the store a
        round before the first event; `opened()` once they are made."""
        return repository.open_run_ops(self.run, self._first(event, data), this_process())

    def opened(self) -> None:
        self._opened = True

    def _first(self, event: str, data: str) -> RunEvents:
        first = RunEvents(
            run_id=self.run.run_id, first=self._next, events=[[event, data]], ttl=self.run.ttl
        )
        self._next += 1
        return first

    def add(self, event: str, data: str) -> None:
        """Kept, to be written soon, numbered after the events before it. A run that could
        not be opened keeps nothing: its events would lie in a partition with no run."""
        if not self._opened or self.closed:
            return
        self._pending.append([event, data])
        if len(self._pending) >= FLUSH_EVENTS:
            self._flush_now()
        elif not self._busy:
            self._flush_soon()

    @property
    def _busy(self) -> bool:
        return self._writing is not None and not self._writing.done()

    def _flush_soon(self) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_SECONDS, self._flush_now)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _flush_now(self) -> None:
        self._cancel_timer()
        if not self._busy:
            self._writing = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        while True:
            batch, first = self._pending, self._next
            self._pending = []
            self._next += len(batch)
            draft = self.draft()
            puts: list[Put] = []
            if batch:
                run_id, ttl = self.run.run_id, self.run.ttl
                puts.append(
                    repository.append_put(
                        RunEvents(run_id=run_id, first=first, events=batch, ttl=ttl)
                    )
                )
            if draft is not None:
                puts.append(messages.draft_put(draft))
            failed = False
            if puts:
                # One store call for both (one commit on SQLite). Not a transaction: the
                # draft is refused once the answer is stored, and the events go on without
                # it; on DynamoDB a transaction would also cost twice the write units.
                try:
                    await self.runs.write_each(puts)
                except (InvalidItem, ItemTooLarge):
                    # Written apart, they tell which cannot be stored. A draft that cannot
                    # (an answer past the item size limit) must not hold the events back,
                    # nor an event that cannot the others or the draft; and no later draft
                    # could be stored either.
                    batch, first = await self._apart(batch, first)
                    if draft is not None and isinstance(
                        await self._alone(puts[-1:], "saving the draft"),
                        InvalidItem | ItemTooLarge,
                    ):
                        self.draft = no_draft
                    failed = bool(batch)
                except Exception:
                    what = " and ".join(
                        (["writing events"] if batch else [])
                        + (["saving the draft"] if draft is not None else [])
                    )
                    log.warning("%s of run %s failed", what, self.run.run_id, exc_info=True)
                    # The events are kept for the next write: a reader sees them late rather
                    # than never. A draft is not: the next one (the answer grew) or the
                    # answer itself holds all it held.
                    failed = bool(batch)
            if failed:
                self._pending = batch + self._pending
                self._next = first
            self.bus.touch(self.run.run_id)
            if failed or len(self._pending) < FLUSH_EVENTS:  # a failed store is not hammered
                if self._pending:
                    self._flush_soon()
                return

    async def _apart(self, batch: list[list[str]], first: int) -> tuple[list[list[str]], int]:
        """The events written one to an item, in order, each under the number its client
        saw: one that can never be stored is dropped (its number stays a gap), so that the
        others and all later events still reach readers. What a failure of another kind
        left unwritten is given back with its first number, for the next write."""
        run_id, ttl = self.run.run_id, self.run.ttl
        for i, event in enumerate(batch):
            number = first + i
            one = RunEvents(run_id=run_id, first=number, events=[event], ttl=ttl)
            try:
                await self.runs.write_each([repository.append_put(one)])
            except (InvalidItem, ItemTooLarge):
                log.error(
                    "event %d (%s) of run %s cannot be stored: dropped",
                    number,
                    event[0],
                    run_id,
                    exc_info=True,
                )
            except Exception:
                log.warning("writing events of run %s failed", run_id, exc_info=True)
                return batch[i:], number
        return [], first + len(batch)

    async def _alone(self, puts: list[Put], what: str) -> Exception | None:
        """What writing `puts` (the draft, or nothing) failed with."""
        if not puts:
            return None
        try:
            await self.runs.write_each(puts)
        except Exception as e:
            log.warning("%s of run %s failed", what, self.run.run_id, exc_info=True)
            return e
        return None

    async def close(
        self, state: RunState, closing: Closing | None = None, sources: Sources | None = None
    ) -> None:
        """Everything written, and the run ended as `state` with `sources` (what the turn
        used), in one transaction with what `closing` gathered (or, refused, each on its
        own). Runs to its end through a cancellation (the turn's task is cancelled when its
        client leaves)."""
        self.closed = True
        ending = asyncio.ensure_future(self._close(state, closing, sources))
        cancelled = False
        while not ending.done():
            try:
                await asyncio.wait({ending})
            except asyncio.CancelledError:
                cancelled = True
        if ending.exception() is not None:
            log.warning("ending run %s failed", self.run.run_id, exc_info=ending.exception())
        if cancelled:
            raise asyncio.CancelledError

    def _last_batch(self) -> RunEvents | None:
        if not self._pending:
            return None
        return RunEvents(
            run_id=self.run.run_id, first=self._next, events=self._pending, ttl=self.run.ttl
        )

    async def _close(
        self, state: RunState, closing: Closing | None, sources: Sources | None
    ) -> None:
        self.draft = no_draft
        if not self._opened:
            if closing is not None:
                await closing.alone()
            return
        self._cancel_timer()
        if self._writing is not None:
            await self._writing
        run_id = self.run.run_id
        if closing is not None:
            last = self._last_batch()
            try:
                await closing.commit(
                    repository.end_ops(run_id, state, self.clock.now(), last=last, sources=sources)
                )
            except Exception:
                # Refused (a replayed answer, a conversation being deleted, a run ended by
                # another process, a lost lease) or failed: each part as it was written
                # before they went together, the run's end last.
                log.info("the closing write of run %s went apart", run_id, exc_info=True)
                await closing.alone()
            else:
                self._pending = []
                self.bus.touch(run_id)
                return
        ended: bool | None = None
        # The last events go in the transaction that ends the run: one store call, not two.
        split = False
        for attempt in range(CLOSING_ATTEMPTS):
            if attempt and not split:
                await asyncio.sleep(FLUSH_SECONDS)
            last = self._last_batch()
            split = False
            try:
                ended = await self.runs.end(
                    run_id, state, self.clock.now(), last=last, sources=sources
                )
            except (InvalidItem, ItemTooLarge):
                # One of them can never be stored: the others go apart, the end after them.
                self._pending, self._next = await self._apart(self._pending, self._next)
                split = True
                continue
            except StoreError:
                log.warning("ending run %s with its last events failed", run_id, exc_info=True)
                continue
            self._pending = []
            break
        if ended is None:  # its last events could not be written: the end goes without them
            ended = await self.runs.end(run_id, state, self.clock.now(), sources=sources)
        if not ended:
            log.warning("run %s was ended by another process before it finished", self.run.run_id)
        self.bus.touch(self.run.run_id)
