"""Memory runs in the table: the only module that reads or writes their items. A run, its
place in its subject's queue and its pending marker are written together (with the
messages, by the caller's transaction) and removed together when the run ends."""

import asyncio
import contextlib
import math
from datetime import UTC, datetime

from api.journal.process import ProcessId
from api.memory_runs.models import (
    MemoryLease,
    MemoryRun,
    MemoryRunQueued,
    PendingMemoryRun,
    RunState,
)
from api.store import keys, leases
from api.store.pages import query_all
from api.store.table import (
    AttrEquals,
    ConditionFailed,
    Delete,
    ItemAbsent,
    Put,
    Table,
    TransactionCancelled,
    Update,
    all_of,
    any_of,
)


def accepted_ops(run: MemoryRun, by: ProcessId, at: float) -> list[Put]:
    """The writes that queue a new run: the run, its place in the queue, its marker."""
    queued = MemoryRunQueued(agent_id=run.agent_id, run_id=run.run_id, queued_at=run.queued_at)
    return [
        Put(run.to_dynamo_item(), condition=ItemAbsent()),
        Put(queued.to_dynamo_item()),
        Put(_marker(run, by, at).to_dynamo_item()),
    ]


def _marker(run: MemoryRun, by: ProcessId, at: float) -> PendingMemoryRun:
    return PendingMemoryRun(
        run_id=run.run_id,
        agent_id=run.agent_id,
        host=by.host,
        pid=by.pid,
        token=by.token,
        touched_at=at,
    )


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat()


class MemoryRunRepository:
    """Seed 004's memory runs: each run, its place in its subject's queue, its pending
    marker, and the subject's lease."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def get(self, agent_id: str, run_id: str) -> MemoryRun | None:
        item = await self.table.get(keys.memory_run(agent_id, run_id))
        return MemoryRun.from_dynamo_item(item) if item else None

    async def next_queued(self, agent_id: str) -> MemoryRunQueued | None:
        """The subject's oldest run not ended: the one to do next."""
        pk, sk = keys.memory_runs_queued(agent_id)
        page = await self.table.query(pk, sk=sk, limit=1)
        return MemoryRunQueued.from_dynamo_item(page.items[0]) if page.items else None

    async def unfinished(self, agent_id: str, *, limit: int = 100) -> list[MemoryRunQueued]:
        """The subject's runs not ended, oldest first (at most `limit`)."""
        pk, sk = keys.memory_runs_queued(agent_id)
        page = await self.table.query(pk, sk=sk, limit=limit)
        return [MemoryRunQueued.from_dynamo_item(item) for item in page.items]

    async def all_unfinished(self, agent_id: str) -> list[MemoryRunQueued]:
        pk, sk = keys.memory_runs_queued(agent_id)
        return [MemoryRunQueued.from_dynamo_item(i) for i in await query_all(self.table, pk, sk=sk)]

    async def runs_page(
        self, agent_id: str, *, limit: int, cursor: str | None = None
    ) -> tuple[list[MemoryRun], str | None]:
        """The subject's runs, by id: what an export reads a page at a time."""
        pk, sk = keys.memory_runs_of(agent_id)
        page = await self.table.query(pk, sk=sk, limit=limit, cursor=cursor)
        return [MemoryRun.from_dynamo_item(item) for item in page.items], page.cursor

    async def restore(self, run: MemoryRun) -> bool:
        """An ended run of an imported subject, for its history; False when it exists already.
        Never queued: it is not run again."""
        if not run.ended:
            raise ValueError("Only ended runs are restored.")
        try:
            await self.table.put(run.to_dynamo_item(), condition=ItemAbsent())
        except ConditionFailed:
            return False
        return True

    async def start(self, run: MemoryRun, worker: str, at: float) -> MemoryRun | None:
        """The run, now running its next attempt; None when it ended or is gone meanwhile."""
        try:
            item = await self.table.update(
                run.key(),
                set={"state": "running", "worker": worker, "started_at": _when(at)},
                add={"attempts": 1},
                condition=any_of(AttrEquals("state", "queued"), AttrEquals("state", "running")),
            )
        except ConditionFailed:
            return None
        return MemoryRun.from_dynamo_item(item)

    async def touch(self, run: MemoryRun, by: ProcessId, at: float) -> None:
        """Its marker names `by` as the process in charge of it, if it still has one."""
        with contextlib.suppress(ConditionFailed):
            await self.table.update(
                keys.pending_memory_run(run.run_id),
                set={"host": by.host, "pid": by.pid, "token": by.token, "touched_at": at},
                condition=AttrEquals("run_id", run.run_id),
            )

    async def end(
        self,
        run: MemoryRun,
        state: RunState,
        at: float,
        *,
        result: str | None = None,
        error: str | None = None,
        edits: int = 0,
    ) -> bool:
        """Ended as `state`, out of its queue, its marker gone; False when it was not this
        attempt's to end (ended already, or deleted with its subject)."""
        changes: dict[str, object] = {"state": state, "ended_at": _when(at), "edits": edits}
        if result is not None:
            changes["result"] = result
        if error is not None:
            changes["error"] = error
        queued = MemoryRunQueued(agent_id=run.agent_id, run_id=run.run_id, queued_at=run.queued_at)
        try:
            await self.table.transact_write(
                [
                    Update(
                        run.key(),
                        set=changes,
                        condition=all_of(
                            AttrEquals("state", "running"), AttrEquals("worker", run.worker)
                        ),
                        label="run",
                    ),
                    Delete(queued.key()),
                    Delete(keys.pending_memory_run(run.run_id)),
                ]
            )
        except TransactionCancelled as e:
            if not e.refused("run"):
                raise
            return False
        return True

    async def failed_attempt(self, run: MemoryRun, error: str) -> None:
        """Queued again after a failed attempt, with why it failed."""
        with contextlib.suppress(ConditionFailed):
            await self.table.update(
                run.key(),
                set={"state": "queued", "error": error},
                condition=all_of(AttrEquals("state", "running"), AttrEquals("worker", run.worker)),
            )

    # --- the subject's lease -------------------------------------------------------------

    async def take_lease(
        self, agent_id: str, holder: str, by: ProcessId, until: float
    ) -> MemoryLease | None:
        """The subject's lease for `holder`, if nobody holds it (an expired lease is nobody's),
        or if its holder's process is known dead; otherwise None and who holds it."""
        lease = MemoryLease(
            agent_id=agent_id,
            holder=holder,
            host=by.host,
            pid=by.pid,
            token=by.token,
            ttl=math.ceil(until),
        )
        if await leases.take(self.table, lease.to_dynamo_item()):
            return lease
        item = await self.table.get(lease.key())
        if item is None:
            return None  # lapsed meanwhile: the next try takes it
        held = MemoryLease.from_dynamo_item(item)
        if not by.knows_dead(held.host, held.pid, held.token):
            return None
        seized = await leases.take(self.table, lease.to_dynamo_item(), from_holder=held.holder)
        return lease if seized else None

    async def lease_of(self, agent_id: str) -> MemoryLease | None:
        item = await self.table.get(keys.memory_lease(agent_id))
        return MemoryLease.from_dynamo_item(item) if item else None

    async def renew_lease(self, agent_id: str, holder: str, until: float) -> bool:
        return await leases.renew(self.table, keys.memory_lease(agent_id), holder, until)

    async def release_lease(self, agent_id: str, holder: str) -> None:
        await leases.release(self.table, keys.memory_lease(agent_id), holder)

    # --- the sweep -----------------------------------------------------------------------

    async def pending(self) -> list[PendingMemoryRun]:
        shards = await asyncio.gather(
            *(self._pending_in(s) for s in range(keys.PENDING_MEMORY_RUN_SHARDS))
        )
        return [marker for shard in shards for marker in shard]

    async def _pending_in(self, shard: int) -> list[PendingMemoryRun]:
        items = await query_all(self.table, keys.pending_memory_runs(shard))
        return [PendingMemoryRun.from_dynamo_item(item) for item in items]

    async def forget(self, run_id: str) -> None:
        await self.table.delete(keys.pending_memory_run(run_id))

    async def forget_all(self, run_ids: list[str]) -> None:
        if run_ids:
            await self.table.batch_write(deletes=[keys.pending_memory_run(r) for r in run_ids])
