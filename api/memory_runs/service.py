"""Memory runs: made with the messages they process (one transaction, written by the
caller), worked one at a time per subject and in order, on any replica, through the queue
port; taken up again after a failed attempt or a crash.

A worker that receives a run takes its subject's lease (an item in the table: one worker
per subject on every replica), then does the subject's oldest runs not ended until this one
has ended: so runs keep their order whatever order the queue hands them out in. A run's
attempt is an agent loop (`AgentLoop`) over the subject's blocks with the core memory
tools, on the subject's provider and model (the offline model by default)."""

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Literal

from api.agents.models import Agent
from api.config import Settings
from api.conversations.messages.models import SAID_ROLES, Message
from api.errors import AppError, NotFound, public_body
from api.journal import events
from api.journal.bus import RunBus
from api.journal.process import ProcessId, this_process
from api.kit import periodic
from api.kit.clock import Clock
from api.kit.secrets import new_id
from api.memory import service as memory
from api.memory_runs import prompt, repository
from api.memory_runs.models import MemoryRun, PendingMemoryRun
from api.observability import metrics
from api.queue.base import Delivery, RunQueue
from api.repositories import Repositories
from api.runtime.builder import TurnBuilder
from api.runtime.hooks import Hooks
from api.runtime.loop import AgentLoop
from api.runtime.state import TurnState
from api.search.engine import SearchEngine
from api.settings import service as settings_service
from api.store import keys
from api.store.table import Put, StoreError
from api.tools.native import NATIVE_MEMORY_TOOLS

log = logging.getLogger(__name__)

LEASE_SECONDS = 30.0  # a subject's lease lapses this long after its worker's last renewal
RENEW_EVERY_SECONDS = 10.0
VISIBILITY_SECONDS = 60.0  # a received run stays its worker's this long, extended while worked
BUSY_RETRY_SECONDS = 1.0  # a run whose subject is busy is tried again after this
FAILED_RETRY_SECONDS = 2.0  # ...and after a failed attempt, times the attempts
SWEEP_SECONDS = 30.0
STALE_SECONDS = LEASE_SECONDS  # a run nobody took charge of for this long is sent again
POLL_SECONDS = 0.25  # how often a waiting request reads a run another replica works
CORE_TOOLS = (
    "core_memory_read",
    "core_memory_append",
    "core_memory_replace",
    "core_memory_delete",
    "core_memory_list_blocks",
)


class MemoryRunNotFound(NotFound):
    code = "memory_run_not_found"


class SubjectGone(AppError):
    code = "subject_gone"
    public = True


def new_run_id(agent_id: str) -> str:
    """A run's id names its subject's agent, so that `GET /memory/runs/{id}` finds it
    through the caller's own agent."""
    return f"run_{agent_id}_{new_id()[:20]}"


def agent_of(run_id: str) -> str | None:
    parts = run_id.split("_")
    if len(parts) != 3 or parts[0] != "run" or not parts[1] or not parts[2]:
        return None
    return parts[1]


def new_run(
    agent: Agent, subject_id: str, messages: list[Message], at: float
) -> tuple[MemoryRun, list[Put]]:
    """A run of these messages (all in one conversation) and the writes that queue it, for
    the transaction that stores the messages."""
    run = MemoryRun(
        run_id=new_run_id(agent.agent_id),
        agent_id=agent.agent_id,
        user_email=agent.created_by,
        subject_id=subject_id,
        conversation_id=messages[0].conversation_id,
        message_keys=[m.key().sk for m in messages],
        messages_count=len(messages),
        queued_at=keys.time_of(messages[-1].created_at),
        # Its time is its place in the queue (its last message's, from the clock that
        # orders every message): listed by time, runs of several workers keep the order
        # they run in, which `at` (each process's own reading) need not.
        created_at=messages[-1].created_at,
    )
    return run, repository.accepted_ops(run, this_process(), at)


async def owned(repos: Repositories, email: str, run_id: str) -> MemoryRun:
    """The caller's run: found through their own agent, or 404."""
    agent_id = agent_of(run_id)
    if agent_id is None:
        raise MemoryRunNotFound("No memory run with this id.")
    agent, run = await asyncio.gather(
        repos.agents.get(email, agent_id), repos.memory_runs.get(agent_id, run_id)
    )
    if agent is None or run is None or run.user_email != email:
        raise MemoryRunNotFound("No memory run with this id.")
    return run


async def pending_count(repos: Repositories, agent_id: str) -> int:
    """The subject's runs not ended yet (up to 100)."""
    return len(await repos.memory_runs.unfinished(agent_id))


Outcome = Literal["done", "retry"]


@dataclass
class MemoryRunner:
    """One per process: accepts runs into the queue, works them with `workers` tasks, and
    sweeps what dead processes left."""

    repos: Repositories
    search: SearchEngine
    clock: Clock
    settings: Settings
    queue: RunQueue
    providers: settings_service.ProviderFactory
    turns: TurnBuilder
    bus: RunBus = field(default_factory=RunBus)
    _tasks: list["asyncio.Task[None]"] = field(default_factory=list)

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._work(n)) for n in range(self.settings.memory_workers)
        ]
        self._tasks.append(asyncio.create_task(self._sweep_forever()))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.queue.aclose()

    # --- accepting and waiting -----------------------------------------------------------

    async def enqueue(self, run: MemoryRun) -> None:
        """Sent to a worker. A failure here loses nothing: the run is in the table, and the
        sweep sends it again once nobody took charge of it for STALE_SECONDS."""
        try:
            await self.queue.send(run.agent_id, run.run_id)
        except Exception:
            log.warning("sending memory run %s failed; the sweep sends it", run.run_id)

    async def wait(self, run: MemoryRun, seconds: float) -> MemoryRun:
        """The run once it ended, or as it is after `seconds`."""
        deadline = time.monotonic() + seconds
        current = run
        while not current.ended:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await self.bus.wait(run.run_id, min(POLL_SECONDS, left))
            found = await self.repos.memory_runs.get(run.agent_id, run.run_id)
            if found is None:
                raise MemoryRunNotFound("The memory run is gone: its subject was deleted.")
            current = found
        return current

    # --- working -----------------------------------------------------------------------

    async def _work(self, number: int) -> None:
        holder = f"{this_process().token}:{number}"
        while True:
            try:
                deliveries = await self.queue.receive(
                    wait_seconds=self.settings.memory_queue_wait_seconds
                )
            except Exception:
                log.warning("receiving memory runs failed", exc_info=True)
                await asyncio.sleep(1.0)
                continue
            for delivery in deliveries:
                try:
                    await self.handle(delivery, holder)
                except Exception:
                    log.exception("memory run %s could not be worked", delivery.run_id)
                    with contextlib.suppress(Exception):
                        await self.queue.retry(delivery, FAILED_RETRY_SECONDS)

    async def handle(self, delivery: Delivery, holder: str) -> Outcome:
        """One delivery: acknowledged once its run has ended, or handed back for later."""
        agent_id = delivery.group
        run = await self.repos.memory_runs.get(agent_id, delivery.run_id)
        if run is None or run.ended:
            await self.queue.ack(delivery)
            return "done"
        me = this_process()
        lease = await self.repos.memory_runs.take_lease(
            agent_id, holder, me, self.clock.now() + LEASE_SECONDS
        )
        if lease is None:
            await self.queue.retry(delivery, BUSY_RETRY_SECONDS)
            return "retry"
        keeper = asyncio.create_task(self._keep(agent_id, holder, delivery))
        try:
            outcome, attempts = await self._drain(agent_id, delivery.run_id, holder)
        finally:
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)
            await self.repos.memory_runs.release_lease(agent_id, holder)
        if outcome == "done":
            await self.queue.ack(delivery)
        else:
            await self.queue.retry(delivery, FAILED_RETRY_SECONDS * attempts)
        return outcome

    async def _keep(self, agent_id: str, holder: str, delivery: Delivery) -> None:
        """The lease renewed, and the delivery kept ours, while the runs are worked."""
        while True:
            await asyncio.sleep(RENEW_EVERY_SECONDS)
            renewed = await self.repos.memory_runs.renew_lease(
                agent_id, holder, self.clock.now() + LEASE_SECONDS
            )
            if not renewed:
                log.warning("lost the memory lease of agent %s", agent_id)
            with contextlib.suppress(Exception):
                await self.queue.extend(delivery, VISIBILITY_SECONDS)

    async def _drain(self, agent_id: str, run_id: str, holder: str) -> tuple[Outcome, int]:
        """The subject's runs, oldest first, until `run_id` has ended; ("retry", attempts)
        when an attempt failed (the runs after it wait: order is kept)."""
        while True:
            queued = await self.repos.memory_runs.next_queued(agent_id)
            if queued is None:
                return "done", 0
            run = await self.repos.memory_runs.get(agent_id, queued.run_id)
            if run is None:
                return "done", 0  # its subject is being deleted
            ended, attempts = await self._attempt(run, holder)
            if not ended:
                return "retry", attempts
            if run.run_id == run_id:
                return "done", 0

    async def _attempt(self, run: MemoryRun, holder: str) -> tuple[bool, int]:
        """One attempt at the run; whether it has ended, and its attempts so far."""
        started = await self.repos.memory_runs.start(run, holder, self.clock.now())
        if started is None:
            return True, 0
        await self.repos.memory_runs.touch(started, this_process(), self.clock.now())
        limit = self.settings.memory_run_attempts
        if started.attempts > limit:
            await self._end(started, "failed", error=started.error or "Too many attempts.")
            return True, started.attempts
        try:
            with metrics.memory_run():
                result, edits = await self.process(started)
        except Exception as e:
            failure = e if isinstance(e, AppError) else AppError("unexpected failure")
            if not isinstance(e, AppError):
                log.exception("memory run %s failed", run.run_id)
            else:
                log.warning("memory run %s failed: %s", run.run_id, e)
            error = f"{failure.code}: {public_body(failure)['message']}"
            if started.attempts >= limit:
                await self._end(started, "failed", error=error)
                return True, started.attempts
            await self.repos.memory_runs.failed_attempt(started, error)
            return False, started.attempts
        await self._end(started, "completed", result=result, edits=edits)
        return True, started.attempts

    async def _end(
        self,
        run: MemoryRun,
        state: Literal["completed", "failed"],
        *,
        result: str | None = None,
        error: str | None = None,
        edits: int = 0,
    ) -> None:
        await self.repos.memory_runs.end(
            run, state, self.clock.now(), result=result, error=error, edits=edits
        )
        self.bus.touch(run.run_id)

    async def process(self, run: MemoryRun) -> tuple[str, int]:
        """The run's agent loop: what the model said it did, and how many edits it made."""
        repos = self.repos
        agent = await repos.agents.get(run.user_email, run.agent_id)
        if agent is None:
            raise SubjectGone("The subject was deleted.")
        views, said = await asyncio.gather(
            memory.list_blocks(repos, run.agent_id),
            repos.messages.of_conversation(run.conversation_id, run.message_keys),
        )
        provider = await self.providers.for_user(repos, run.user_email, agent.agent_provider)
        state = TurnState(
            user_email=run.user_email,
            agent_id=run.agent_id,
            conversation_id=run.conversation_id,
            actor_id=run.user_email,
            session_id=run.conversation_id,
            run_id=run.run_id,
        )
        turn = self.turns.build(
            agent,
            provider,
            state,
            prompt=prompt.new_messages(
                [(m.role, m.content) for m in said if m.role in SAID_ROLES and m.content.strip()]
            ),
            tools=[NATIVE_MEMORY_TOOLS[name] for name in CORE_TOOLS],
            hooks=Hooks((), state),  # the run's own exchange with its model is not kept
            core_memory=views,
            source="memory_run",
        )
        result, edits = "", 0
        loop = AgentLoop(turn, system_prompt=prompt.system_prompt(views))
        async for event in loop.stream():
            if isinstance(event, events.ToolAnswered):
                edits += 1
            elif isinstance(event, events.FinalMessage):
                result = event.content
        return result, edits

    # --- the sweep -----------------------------------------------------------------------

    async def _sweep_forever(self) -> None:
        async def sweep() -> None:
            sent = await self.sweep()
            if sent:
                log.warning("%d memory runs left by a stopped process were sent again", sent)
                metrics.BACKGROUND_RUNS_SWEPT.labels("memory").inc(sent)

        await periodic.every(
            SWEEP_SECONDS, sweep, "looking for memory runs left behind", (StoreError,)
        )

    async def sweep(self) -> int:
        """Sends again the runs not ended whose process is gone (known dead on this host,
        or silent for STALE_SECONDS) and whose subject nobody works on; forgets the
        markers of runs that ended or went. How many were sent."""
        me = this_process()
        markers = await self.repos.memory_runs.pending()
        sent = await asyncio.gather(*(self._sweep_one(me, marker) for marker in markers))
        return sum(sent)

    async def _sweep_one(self, me: ProcessId, marker: PendingMemoryRun) -> bool:
        run, lease = await asyncio.gather(
            self.repos.memory_runs.get(marker.agent_id, marker.run_id),
            self.repos.memory_runs.lease_of(marker.agent_id),
        )
        if run is None or run.ended:
            await self.repos.memory_runs.forget(marker.run_id)
            return False
        now = self.clock.now()
        dead = me.knows_dead(marker.host, marker.pid, marker.token)
        if not dead and now - marker.touched_at < STALE_SECONDS:
            return False
        if lease is not None and not me.knows_dead(lease.host, lease.pid, lease.token):
            return False  # being worked on, by a process that may well be alive
        await self.repos.memory_runs.touch(run, me, now)
        await self.queue.send(run.agent_id, run.run_id)
        return True
