"""Reading a run back: its events from any point, then live until it ends, on any replica;
and the runs whose process died, found and ended as interrupted."""

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator

from api.conversations import repository as conversations
from api.errors import NotFound
from api.journal import events
from api.journal.bus import RunBus
from api.journal.models import LiveRun, Run, RunEvents, StoredEvent
from api.journal.process import this_process
from api.kit.clock import Clock
from api.repositories import Repositories
from api.store.table import TransactionCancelled

log = logging.getLogger(__name__)

POLL_SECONDS = 0.25  # how often a reader on another replica looks for new events
ALIVE_CHECK_SECONDS = 5.0  # how often a reader checks that the run's process still lives


class RunNotFound(NotFound):
    code = "run_not_found"


async def owned(repos: Repositories, email: str, run_id: str) -> Run:
    """The caller's run; another tenant's is as absent as one that never was."""
    run = await repos.journal.get(run_id)
    if run is None or run.user_email != email:
        raise RunNotFound("No run with this id.")
    return run


async def follow(
    repos: Repositories,
    clock: Clock,
    bus: RunBus,
    run: Run,
    *,
    after: int = 0,
    watch_seconds: float = 0.0,
) -> AsyncIterator[StoredEvent]:
    """The run's events numbered above `after`, as stored and then as they are written,
    until it ends. While it runs the reader says so every `watch_seconds / 2` (a run whose
    client left keeps going while someone follows it)."""
    run_id = run.run_id
    batches, current = await repos.journal.read_from(run_id, 1)
    next_first = 1
    watched_at = alive_at = time.monotonic()
    if watch_seconds > 0:
        await repos.journal.watched(run_id, clock.now() + watch_seconds)
    while True:
        for batch in batches:
            for stored in batch.numbered():
                if stored.number > after:
                    after = stored.number
                    yield stored
            next_first = batch.first + len(batch.events)
        if current is None or current.ended:
            return
        now = time.monotonic()
        if watch_seconds > 0 and now - watched_at >= watch_seconds / 2:
            watched_at = now
            await repos.journal.watched(run_id, clock.now() + watch_seconds)
        if now - alive_at >= ALIVE_CHECK_SECONDS:
            alive_at = now
            if await repos.conversations.lease_holder(current.conversation_id) != run_id:
                await end_dead(repos, clock, current)
        await bus.wait(run_id, POLL_SECONDS)
        batches, current = await repos.journal.read_from(run_id, next_first)


# The events a dead process had sent but not yet written (about FLUSH_SECONDS of them)
# worth) took numbers its client may have seen: the ending is numbered well past them, so
# that a client resuming from the last id it saw still gets it.
DEAD_RUN_GAP = 1000


async def end_dead(repos: Repositories, clock: Clock, run: Run) -> bool:
    """A run whose process died: its journal ends as an interrupted run's does, once
    (several processes may find it dead at once: the ending goes with the end, in one
    transaction), and its conversation's lease is released in the same write, so that
    the conversation takes its next turn at once rather than when the lease lapses. The
    draft of its answer is in its conversation already, interrupted."""
    first = await repos.journal.next_number(run.run_id) + DEAD_RUN_GAP
    ending = [[e.EVENT, e.json()] for e in events.interrupted(run.run_id)]
    last = RunEvents(run_id=run.run_id, first=first, events=ending, ttl=run.ttl)
    end = functools.partial(repos.journal.end, run.run_id, "interrupted", clock.now())
    try:
        release = conversations.release_lease_op(run.conversation_id, run.run_id)
        ended = await end(last=last, also=[release])
    except TransactionCancelled as e:
        if not e.refused(conversations.LEASE):
            raise
        ended = await end(last=last)  # the lease lapsed already, and may be another's
    if not ended:
        return False  # ended meanwhile, by itself or by another process's sweep
    log.warning("run %s was left running by a process that died: interrupted", run.run_id)
    return True


async def sweep_dead(repos: Repositories, clock: Clock) -> int:
    """Ends the runs whose process is gone: known dead on this host at once (a restart),
    elsewhere once their conversation's lease has lapsed. How many were ended."""
    live = await repos.journal.live_runs()
    ended = await asyncio.gather(*(_sweep_one(repos, clock, marker) for marker in live))
    return sum(ended)


async def _sweep_one(repos: Repositories, clock: Clock, marker: LiveRun) -> bool:
    run, holder = await asyncio.gather(
        repos.journal.get(marker.run_id),
        repos.conversations.lease_holder(marker.conversation_id),
    )
    if run is None or run.ended:
        await repos.journal.forget_live(marker.run_id)
        return False
    dead = this_process().knows_dead(marker.host, marker.pid, marker.token)
    if not dead and holder == run.run_id:
        return False
    return await end_dead(repos, clock, run)
