"""Runs in the table: one partition per run holding its state and its events in batches,
and a marker per running turn in a few shared partitions."""

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

from api.journal.models import LiveRun, Run, RunEvents, RunState, Sources
from api.journal.process import ProcessId
from api.store import keys
from api.store.pages import query_all
from api.store.table import (
    AttrEquals,
    Delete,
    Item,
    ItemExists,
    Put,
    Table,
    TransactionCancelled,
    TxOp,
    Update,
)


def opening_items(run: Run, first: RunEvents, by: ProcessId) -> list[Item]:
    """What opens a run: the run, its first events, and its marker among the live runs."""
    live = LiveRun(
        run_id=run.run_id,
        conversation_id=run.conversation_id,
        host=by.host,
        pid=by.pid,
        token=by.token,
    )
    return [run.to_dynamo_item(), first.to_dynamo_item(), live.to_dynamo_item()]


def open_run_ops(run: Run, first: RunEvents, by: ProcessId) -> list[TxOp]:
    """The same writes, for a transaction the caller makes (the turn's first message's)."""
    return [Put(item) for item in opening_items(run, first, by)]


def append_put(batch: RunEvents) -> Put:
    """The write that adds a batch of events, for the caller to make with its others."""
    return Put(batch.to_dynamo_item())


RUN = "run"  # the label of the run's end in a transaction


def end_ops(
    run_id: str,
    state: RunState,
    at: float,
    *,
    last: RunEvents | None,
    sources: Sources | None = None,
) -> list[TxOp]:
    """The writes that end the run as `state` if it is still running (refused, RUN, when
    someone ended it already), with `last`, its closing events, and `sources`, what the
    turn used (on the run's item: no write of its own); for a transaction."""
    ended: dict[str, object] = {
        "state": state,
        "ended_at": datetime.fromtimestamp(at, UTC).isoformat(),
    }
    if sources is not None:
        ended["sources"] = sources.model_dump(mode="json", exclude_none=True)
    ops: list[TxOp] = [
        Update(
            keys.run(run_id),
            set=ended,
            condition=AttrEquals("state", "running"),
            label=RUN,
        ),
        Delete(keys.live_run(run_id)),
    ]
    if last is not None:
        ops.append(Put(last.to_dynamo_item()))
    return ops


class JournalRepository:
    """The runs of turns: each run with its events, and the markers of those still running."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def open_run(self, run: Run, first: RunEvents, by: ProcessId) -> None:
        await self.table.batch_write(puts=opening_items(run, first, by))

    async def write_each(self, puts: Sequence[Put]) -> None:
        """Batches of events (`append_put`), with the draft of the run's answer when the
        caller has one, each written or refused by its own condition (not all or nothing:
        a draft refused because the answer is stored must not hold the events back)."""
        await self.table.put_each(puts)

    async def end(
        self,
        run_id: str,
        state: RunState,
        at: float,
        *,
        last: RunEvents | None = None,
        sources: Sources | None = None,
        also: Sequence[TxOp] = (),
    ) -> bool:
        """Ended as `state`, if it was still running (False: someone ended it already), with
        `last`, its closing events, written with the end or not at all, `sources`, what the
        turn used, and `also`, other writes in the same transaction (TransactionCancelled
        when one of them is refused)."""
        ops = end_ops(run_id, state, at, last=last, sources=sources)
        try:
            await self.table.transact_write([*ops, *also])
        except TransactionCancelled as e:
            if not e.refused(RUN):
                raise
            await self.table.delete(keys.live_run(run_id))
            return False
        return True

    async def get(self, run_id: str) -> Run | None:
        item = await self.table.get(keys.run(run_id))
        return Run.from_dynamo_item(item) if item else None

    async def read_from(self, run_id: str, first: int) -> tuple[list[RunEvents], Run | None]:
        """The batches from event `first` on, and the run as it was after them: one query."""
        pk, sk = keys.run_events_from(run_id, first)
        batches: list[RunEvents] = []
        run: Run | None = None
        for item in await query_all(self.table, pk, sk=sk):
            if item.get(keys.ENTITY) == keys.RUN:
                run = Run.from_dynamo_item(item)
            else:
                batches.append(RunEvents.from_dynamo_item(item))
        return batches, run

    async def next_number(self, run_id: str) -> int:
        """The number the run's next event takes."""
        pk, sk = keys.run_events_of(run_id)
        page = await self.table.query(pk, sk=sk, forward=False, limit=1)
        if not page.items:
            return 1
        last = RunEvents.from_dynamo_item(page.items[0])
        return last.first + len(last.events)

    async def watched(self, run_id: str, until: float) -> None:
        """A reader follows the run until `until` at least (the run's process reads this)."""
        await self.table.update(
            keys.run(run_id), set={"watched_until": until}, condition=ItemExists()
        )

    async def live_runs(self) -> list[LiveRun]:
        shards = await asyncio.gather(*(self._live_in(s) for s in range(keys.LIVE_RUN_SHARDS)))
        return [run for shard in shards for run in shard]

    async def _live_in(self, shard: int) -> list[LiveRun]:
        items = await query_all(self.table, keys.live_runs(shard))
        return [LiveRun.from_dynamo_item(item) for item in items]

    async def forget_live(self, run_id: str) -> None:
        await self.table.delete(keys.live_run(run_id))
