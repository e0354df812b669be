"""A run's journal: its events written to the table as they happen, in batches (every
FLUSH_SECONDS or every FLUSH_EVENTS events, whichever comes first), together with the
draft of the answer being streamed. A client that lost its stream reads them back on any
replica; a process killed mid-answer leaves what its client saw, marked as cut off."""

import asyncio
import logging
from collections.abc import Callable

from api.kit.clock import Clock
from api.messages import repository as messages
from api.messages.models import Message
from api.runs import repository
from api.runs.bus import RunBus
from api.runs.models import Run, RunEvents, RunState
from api.runs.process import this_process
from api.store.table import StoreError, Table, TxOp

log = logging.getLogger(__name__)

FLUSH_SECONDS = 0.25
FLUSH_EVENTS = 20
CLOSING_ATTEMPTS = 3  # writes of the last events before the run ends without them


def no_draft() -> Message | None:
    return None


class RunJournal:
    def __init__(
        self,
        table: Table,
        clock: Clock,
        run: Run,
        bus: RunBus,
        draft: Callable[[], Message | None] = no_draft,
    ) -> None:
        self.table = table
        self.clock = clock
        self.run = run
        self.bus = bus
        self.draft = draft  # what the answer has that no draft has saved yet, if anything
        self._pending: list[list[str]] = []
        self._next = 1  # the number of the first pending event
        self._timer: asyncio.TimerHandle | None = None
        self._writing: asyncio.Task[None] | None = None
        self._opened = False

    async def open(self, event: str, data: str) -> None:
        """The run exists with its first event (a reader may ask for it) once this returns."""
        await repository.open_run(self.table, self.run, self._first(event, data), this_process())
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
        if not self._opened:
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
            writes = []
            if batch:
                run_id, ttl = self.run.run_id, self.run.ttl
                writes.append(
                    repository.append(
                        self.table, RunEvents(run_id=run_id, first=first, events=batch, ttl=ttl)
                    )
                )
            if draft is not None:
                writes.append(messages.save_draft(self.table, draft))
            results = await asyncio.gather(*writes, return_exceptions=True)
            failed = bool(batch) and isinstance(results[0], BaseException)
            if failed:
                # Kept for the next write: a reader sees them late rather than never.
                log.warning("writing events of run %s failed", self.run.run_id, exc_info=results[0])
                self._pending = batch + self._pending
                self._next = first
            for result in results[1 if batch else 0 :]:
                if isinstance(result, BaseException):
                    log.warning(
                        "saving the draft of run %s failed", self.run.run_id, exc_info=result
                    )
            self.bus.touch(self.run.run_id)
            if failed or len(self._pending) < FLUSH_EVENTS:  # a failed store is not hammered
                if self._pending:
                    self._flush_soon()
                return

    async def close(self, state: RunState) -> None:
        """Everything written, and the run ended as `state`. Runs to its end through a
        cancellation (the turn's task is cancelled when its client leaves)."""
        closing = asyncio.ensure_future(self._close(state))
        cancelled = False
        while not closing.done():
            try:
                await asyncio.wait({closing})
            except asyncio.CancelledError:
                cancelled = True
        if closing.exception() is not None:
            log.warning("ending run %s failed", self.run.run_id, exc_info=closing.exception())
        if cancelled:
            raise asyncio.CancelledError

    def _last_batch(self) -> RunEvents | None:
        if not self._pending:
            return None
        return RunEvents(
            run_id=self.run.run_id, first=self._next, events=self._pending, ttl=self.run.ttl
        )

    async def _close(self, state: RunState) -> None:
        self.draft = no_draft
        if not self._opened:
            return
        self._cancel_timer()
        if self._writing is not None:
            await self._writing
        run_id = self.run.run_id
        ended: bool | None = None
        # The last events go in the transaction that ends the run: one store call, not two.
        for attempt in range(CLOSING_ATTEMPTS):
            if attempt:
                await asyncio.sleep(FLUSH_SECONDS)
            last = self._last_batch()
            try:
                ended = await repository.end(self.table, run_id, state, self.clock.now(), last=last)
            except StoreError:
                log.warning("ending run %s with its last events failed", run_id, exc_info=True)
                continue
            self._pending = []
            break
        if ended is None:  # its last events could not be written: the end goes without them
            ended = await repository.end(self.table, run_id, state, self.clock.now())
        if not ended:
            log.warning("run %s was ended by another process before it finished", self.run.run_id)
        self.bus.touch(self.run.run_id)
