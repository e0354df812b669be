"""The runtime (seed 001's loader): reads what a turn needs in one concurrent round, injects
hooks and state into the agent's architecture, and runs it as a stream of events.

Before the LLM is called a turn waits for: the caller's ownership of the conversation (the
route's one read), then one round of concurrent reads (the agent, its core memory, its
provider settings, and what the hooks load, such as the recent conversation), then the
write of the user's message."""

import asyncio
import contextlib
import functools
import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from api.agents import service as agents
from api.agents.models import Agent
from api.agents.specialists import MAX_DEPTH
from api.config import Settings
from api.conversations.messages.schemas import MAX_WAIT_SECONDS
from api.errors import AppError, public_body
from api.journal import events
from api.journal.bus import RunBus
from api.journal.closing import Closing, Commit
from api.journal.journal import RunJournal
from api.journal.models import Run, SourceBlock
from api.kit.aio import ready
from api.kit.clock import Clock
from api.kit.secrets import new_id
from api.llm.errors import PROVIDER_FAILURES
from api.llm.types import ChatMessage, ToolSpec
from api.memory import compaction
from api.memory import service as memory
from api.memory.service import BlockView
from api.observability import metrics
from api.repositories import Repositories
from api.runtime import specialists
from api.runtime.activity import Activity
from api.runtime.architectures.base import AgentArchitecture
from api.runtime.builder import TurnBuilder
from api.runtime.continuity import ContinuityHook
from api.runtime.handoff import HandoffToUser
from api.runtime.hooks import HookProvider, Hooks
from api.runtime.lease import ConversationBusy, Lease, Renewals
from api.runtime.loop import offered_at, opening
from api.runtime.request import TurnRequest, Via
from api.runtime.state import TurnState
from api.runtime.toolbox import TurnTool
from api.runtime.turn import DAY, Turn
from api.search.engine import SearchEngine
from api.settings import service as settings_service
from api.settings.models import ProviderSettings
from api.settings.providers import PROVIDERS
from api.store.table import Item, TxOp
from api.tools.native import ToolContext, offered

log = logging.getLogger(__name__)
T = TypeVar("T")
Outcome = Literal["completed", "failed", "interrupted"]


class ArchitectureUnavailable(AppError):
    status_code = 409
    code = "architecture_unavailable"


# What a turn's request can answer before its stream begins, or instead of its JSON answer
# when it fails: the agent (unknown), its provider, its architecture, another turn running
# in the conversation.
TURN_FAILURES = (
    agents.AgentNotFound,
    agents.ProviderNotConfigured,
    *settings_service.PROVIDER_SETUP[1:],
    ArchitectureUnavailable,
    ConversationBusy,
    *PROVIDER_FAILURES,
)


class Runtime:
    """One per app: the store, the hook providers injected into every turn, and the turns
    still running (a turn whose client left finishes storing what it produced)."""

    def __init__(
        self,
        repos: Repositories,
        clock: Clock,
        settings: Settings,
        hook_providers: Sequence[HookProvider] = (),
        *,
        search: SearchEngine,
        architectures: Mapping[str, type[AgentArchitecture]],
        providers: settings_service.ProviderFactory,
        turns: TurnBuilder,
    ) -> None:
        self.repos = repos
        # The plug-ins its agents may have, by name: handed in at start-up (api/main.py), so
        # that which are installed is the app's choice, not an import's.
        self.architectures = architectures
        self.search = search
        self.clock = clock
        self.settings = settings
        self.hook_providers: tuple[HookProvider, ...] = (
            ContinuityHook(repos, search),
            *hook_providers,
        )
        self.providers = providers
        self.turns = turns
        self.running: set[asyncio.Task[None]] = set()
        self.runs = RunBus()
        self.renewals = Renewals()  # of the leases its running turns hold

    async def prepare(
        self, request: TurnRequest, *, agent: Agent | None = None, wait: bool = False
    ) -> "PreparedTurn":
        """Everything the turn needs, read concurrently; errors here (an unconfigured
        provider, say) are the request's and come back as a plain JSON error."""
        state = _state_of(request)
        hooks = Hooks(self.hook_providers, state, Closing(self._committer(request.agent_id)))
        agent_read: asyncio.Future[Agent] = asyncio.ensure_future(
            ready(agent) if agent else agents.get(self.repos, request.user_email, request.agent_id)
        )

        async def load_agent() -> Agent:
            return await asyncio.shield(agent_read)

        # One turn at a time in a conversation, on every replica: its lease is taken in
        # the same round as the reads; a turn that waits its turn takes it first, so that
        # it reads what the turn before it left.
        lease = Lease(
            self.repos.conversations,
            self.clock,
            request.conversation_id,
            state.run_id,
            renewals=self.renewals,
        )
        if wait:
            try:
                await lease.take(wait_seconds=MAX_WAIT_SECONDS)
            except BaseException:
                agent_read.cancel()
                raise
        # All in flight together; the first failure, in this order, is the one reported.
        results = await asyncio.gather(
            ready(None) if wait else lease.take(),
            agent_read,
            memory.blocks_and_warnings(self.repos, request.agent_id),
            self._provider_settings(request.user_email, agent),
            hooks.agent_initialized(load_agent, request.prompt),
            return_exceptions=True,
        )
        try:
            _ok(results[0])
            return await self._prepared(request, state, hooks, lease, list(results[1:]))
        except BaseException:
            await lease.free()
            raise

    async def _prepared(
        self,
        request: TurnRequest,
        state: TurnState,
        hooks: Hooks,
        lease: Lease,
        results: list[Any],
    ) -> "PreparedTurn":
        plugged, turn = await self._assemble(request, state, hooks, results)
        now = self.clock.now()
        expiry = turn.agent.event_expiry_days
        run = Run(
            run_id=state.run_id,
            user_email=state.user_email,
            agent_id=state.agent_id,
            conversation_id=state.conversation_id,
            created_at=datetime.fromtimestamp(now, UTC),
            ttl=math.ceil(now) + expiry * DAY if expiry else None,
        )
        journal = RunJournal(self.repos.journal, self.clock, run, self.runs, turn.draft.take)
        return PreparedTurn(self, plugged, turn, turn.tools.context, lease, journal)

    async def context(self, request: TurnRequest, *, agent: Agent) -> "TurnContext":
        """What the next turn of `request` would send the model first, read and put together
        as `prepare` does, but with no lease, no run and no write (the context preview): an
        empty `conversation_id` stands for no conversation, so no recent turns."""
        state = _state_of(request)
        hooks = Hooks(self.hook_providers, state)
        results = await asyncio.gather(
            ready(agent),
            memory.blocks_and_warnings(self.repos, request.agent_id),
            self._provider_settings(request.user_email, agent),
            hooks.agent_initialized(lambda: ready(agent), request.prompt),
            return_exceptions=True,
        )
        plugged, turn = await self._assemble(request, state, hooks, list(results))
        return TurnContext(plugged, turn)

    async def _assemble(
        self, request: TurnRequest, state: TurnState, hooks: Hooks, results: list[Any]
    ) -> tuple[AgentArchitecture, Turn]:
        """The turn from the round of reads (the agent, its core memory, its provider's
        settings, the hooks' sections): its architecture, provider, tools and prompt parts.
        A turn and the context preview both come through here."""
        agent: Agent = _ok(results[0])
        (views, warnings), stored, sections = _ok(results[1]), _ok(results[2]), _ok(results[3])
        architecture = self.architectures.get(agent.agent_architecture)
        if architecture is None:
            raise ArchitectureUnavailable(
                f"The architecture {agent.agent_architecture!r} is not installed on this "
                "server; choose another for this agent."
            )
        provider = await self.providers.from_stored(
            stored.get(agent.agent_provider), agent.agent_provider
        )
        turn_tools: list[TurnTool] = []
        if agent.handoff_to_user and request.via is None:  # a person is there to ask
            turn_tools.append(HandoffToUser())
        asks = specialists.tools_for(
            self, agent, state, request.via, await self._specialists(agent, request.via)
        )
        turn_tools += asks
        if asks:  # whom it may ask, before what the hooks added
            sections = [specialists.routing(asks), *sections]
        turn = self.turns.build(
            agent,
            provider,
            state,
            prompt=request.prompt,
            tools=offered(agent, architecture.tools),
            turn_tools=turn_tools,
            hooks=hooks,
            core_memory=views,
            source="tool",
            context=sections,
            core_memory_warnings=warnings,
            expiry_days=agent.event_expiry_days,
            coalesce_seconds=self.settings.sse_coalesce_ms / 1000,
        )
        plugged = architecture()
        # What its context holds before its first LLM call; its search tools add theirs.
        turn.used.add(hooks.sources)
        turn.used.held(
            SourceBlock(label=v.name, version=v.version) for v in plugged.blocks_shown(turn)
        )
        return plugged, turn

    async def _specialists(self, agent: Agent, via: Via | None) -> list[Agent]:
        """The specialists the agent names that still exist (one deleted is left out), read
        together; none where the depth limit leaves it none to offer."""
        if not agent.specialists or (via is not None and via.depth >= MAX_DEPTH):
            return []
        found = await asyncio.gather(
            *(self.repos.agents.get(agent.created_by, s) for s in agent.specialists)
        )
        return [s for s in found if s is not None]

    def _committer(self, agent_id: str) -> Commit:
        """How the transaction that ends a turn is written: through the search's change
        log when it puts searchable copies."""

        async def commit(ops: Sequence[TxOp], upserts: Sequence[Item]) -> None:
            if upserts:
                await self.search.commit(agent_id, ops, upserts=upserts)
            else:
                await self.repos.table.transact_write(ops)

        return commit

    async def _provider_settings(
        self, email: str, agent: Agent | None
    ) -> dict[str, ProviderSettings]:
        """The stored settings the agent's provider needs: when the agent is not read yet,
        all of the user's (one query) so as not to wait for it."""
        if agent is None:
            return {s.provider_name: s for s in await self.repos.provider_settings.list_for(email)}
        spec = PROVIDERS.get(agent.agent_provider)
        if spec is None or spec.credentials is None:
            return {}
        found = await self.repos.provider_settings.get(email, agent.agent_provider)
        return {found.provider_name: found} if found else {}

    def start(self, work: Awaitable[None]) -> asyncio.Task[None]:
        """A turn's work as its own task, so that a client leaving cancels it cleanly."""
        task = asyncio.ensure_future(work)
        self.running.add(task)
        task.add_done_callback(self._forget)
        return task

    def left(self, task: asyncio.Task[None], run_id: str, *, grace_seconds: float) -> None:
        """The client of a running turn left. The turn stops now, or, given grace, goes on
        while someone follows it (`GET /runs/{id}/events`, or the same request sent again
        with its Idempotency-Key) and stops once nobody has for `grace_seconds`."""
        if task.done():
            return
        if grace_seconds <= 0:
            task.cancel()
            return
        self.start(self._unless_followed(task, run_id, grace_seconds))

    async def _unless_followed(
        self, task: asyncio.Task[None], run_id: str, grace_seconds: float
    ) -> None:
        deadline = self.clock.now() + grace_seconds
        while not task.done():
            await asyncio.wait({task}, timeout=max(0.0, deadline - self.clock.now()))
            if task.done():
                return
            run = await self.repos.journal.get(run_id)
            watched = run.watched_until if run and run.watched_until else 0.0
            if watched <= self.clock.now():
                task.cancel()
                return
            deadline = watched

    def _forget(self, task: asyncio.Task[None]) -> None:
        self.running.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a turn's task failed", exc_info=task.exception())

    async def stop(self) -> None:
        """At shutdown: cancel running turns and let them store what they produced."""
        for task in list(self.running):
            task.cancel()
        await asyncio.gather(*self.running, return_exceptions=True)


def _state_of(request: TurnRequest) -> TurnState:
    return TurnState(
        user_email=request.user_email,
        agent_id=request.agent_id,
        conversation_id=request.conversation_id,
        actor_id=request.actor_id,
        session_id=request.session_id,
        run_id=new_id(),
    )


@dataclass(frozen=True)
class TurnContext:
    """A turn put together but never run: what its first LLM call would send."""

    architecture: AgentArchitecture
    turn: Turn

    @property
    def messages(self) -> list[ChatMessage] | None:
        """The system prompt and the person's message, as `AgentLoop` sends them; None for
        an architecture that does not say its prompt before its turn runs."""
        own = self.architecture.system_prompt(self.turn)
        return None if own is None else opening(self.turn, own)

    @property
    def tools(self) -> list[ToolSpec]:
        return offered_at(self.turn.tools, step=1, max_steps=self.turn.max_steps)


def _ok(result: T | BaseException) -> T:
    if isinstance(result, BaseException):
        raise result
    return result


@dataclass
class PreparedTurn:
    runtime: Runtime
    architecture: AgentArchitecture
    turn: Turn
    tool_context: ToolContext
    lease: Lease  # the conversation's, taken when the turn was prepared
    journal: RunJournal  # its events, kept for readers who resume
    failure: AppError | None = field(default=None)  # why the run failed, if it did
    outcome: Outcome | None = field(default=None)  # how it ended, once it has
    began: bool = field(default=False)  # whether `stream` ran: from then on it frees the lease
    task: "asyncio.Task[None] | None" = field(default=None)  # the task streaming it, if any

    async def abandon(self) -> None:
        """The turn will never run (its client left before its stream started): its
        conversation is free at once, not when the lease lapses."""
        if not self.began:
            await self.lease.free()

    @functools.cached_property
    def started(self) -> events.RunStarted:
        state = self.turn.state
        return events.RunStarted(
            state.run_id, state.agent_id, state.conversation_id, state.actor_id, state.session_id
        )

    async def stream(self) -> AsyncGenerator[events.RunEvent, None]:
        """The whole run: started, what the architecture yields, memory upkeep, and
        completed; or an error and failed. Cancellation (the client left) goes on up.
        The conversation's lease is renewed while it runs and freed when it ends."""
        self.began = True
        self.lease.keep()
        journal = self.journal
        provider = self.turn.llm.provider.name
        metrics.turn_started(provider)
        try:
            async with contextlib.aclosing(self._run()) as run:
                async for event in run:
                    if event is not self.started:  # journaled when the run was opened
                        journal.add(event.EVENT, event.json())
                    yield event
        finally:
            failure = self.failure.code if self.failure else None
            metrics.turn_finished(provider, self.outcome or "interrupted", failure)
            if self.outcome in (None, "interrupted"):  # ended without saying so
                for event in events.interrupted(self.turn.state.run_id):
                    journal.add(event.EVENT, event.json())
            try:
                if not journal.closed:
                    await self._close(self.outcome or "interrupted")
            finally:
                await self.lease.free()  # nothing left to free once the closing carried it

    async def _close(self, outcome: Outcome) -> None:
        """The run's end, its last events, what the hooks gave the closing (the answer
        and the copies), the turn's time as its conversation's activity and its agent's
        use, and the lease's release: one transaction."""
        closing = self.turn.hooks.closing
        try:
            if closing is not None:
                awaiting = outcome == "completed" and self.turn.ended_by == "handoff"
                closing.add(
                    Activity(
                        self.runtime.repos,
                        self.runtime.clock,
                        self.turn.state,
                        awaiting_user=awaiting,
                    )
                )
            release = await self.lease.closing()
            if closing is not None and release is not None:
                closing.add(release)
        finally:
            await self.journal.close(outcome, closing, self.turn.used.record())

    async def _run(self) -> AsyncGenerator[events.RunEvent, None]:
        turn = self.turn
        state = turn.state
        started = self.started
        announced = False
        try:
            # The user's message and the run are stored (one transaction) while the LLM call
            # starts: the model need not wait for our writes, but the client hears of the
            # run only once both are (a reader may then ask for it; a crash keeps the
            # message).
            opening = self.journal.opening(started.EVENT, started.json())
            turn.hooks.add_soon(turn.messages.new("user", turn.prompt), written_with=opening)
            async with contextlib.aclosing(self.architecture.run(turn)) as produced:
                first = asyncio.ensure_future(anext(produced, None))
                try:
                    await turn.hooks.settled()
                except BaseException:
                    first.cancel()
                    await asyncio.gather(first, return_exceptions=True)
                    raise
                self.journal.opened()
                announced = True
                yield started
                used_told = False
                event = await first
                while event is not None:
                    if isinstance(event, events.FinalMessage) and not used_told:
                        # What the answer used, just before it: complete by then, as the
                        # model's searches all came before its last step.
                        yield events.ContextUsed.of(state.run_id, turn.used.record())
                        used_told = True
                    yield event
                    # Let the client have it before the run parses what else arrived.
                    await asyncio.sleep(0)
                    event = await anext(produced, None)
            await turn.hooks.settled()
            if not used_told:  # an architecture that ended without a final message
                yield events.ContextUsed.of(state.run_id, turn.used.record())
            for event in await self._memory_upkeep():
                yield event
        except asyncio.CancelledError:
            await asyncio.gather(turn.hooks.settled(), return_exceptions=True)
            if not self.journal.closed:  # not cancelled while it ended as completed
                await self._finished("interrupted")
            raise
        except Exception as e:
            if isinstance(e, AppError):
                log.warning("turn %s failed: %s", state.run_id, e)
                self.failure = e
            else:
                log.exception("turn %s failed", state.run_id)
                self.failure = AppError("unexpected failure")
            body = public_body(self.failure)
            if not announced:
                yield started
            await asyncio.gather(turn.hooks.settled(), return_exceptions=True)
            if turn.llm.calls:
                await self._memory_upkeep(quiet=True)
            await self._finished("failed")
            yield events.RunError(state.run_id, str(body["code"]), str(body["message"]))
            yield events.RunFailed(state.run_id, str(body["code"]))
            return
        await self._finished("completed")
        completed = events.RunCompleted(
            state.run_id,
            turn.llm.calls,
            events.Usage(turn.llm.input_tokens, turn.llm.output_tokens),
            reason=turn.ended_by,
        )
        # Ended before it says so: a client that hears the run completed finds its answer
        # stored and searchable, and the conversation free for the next turn.
        self.journal.add(completed.EVENT, completed.json())
        await self._close("completed")
        yield completed

    async def _memory_upkeep(self, *, quiet: bool = False) -> list[events.RunEvent]:
        """Counts this turn for blocks at their warning level (the prompt told the model),
        and compacts a block whose warning was ignored for long enough; not for an
        architecture whose model never sees core memory."""
        turn = self.turn
        if not turn.llm.calls or not self.architecture.shows_core_memory:
            return []
        try:
            report = await compaction.note_turn(
                self.runtime.repos,
                self.runtime.search,
                turn.agent.agent_id,
                self.tool_context.summarizer,
                # What the turn read at its start, unless one of its tools may have written.
                as_read=None
                if turn.tools.changed_core_memory or turn.core_memory_warnings is None
                else (turn.core_memory, turn.core_memory_warnings),
            )
        except Exception:
            if not quiet:
                raise
            log.warning("memory upkeep after turn %s failed", turn.state.run_id, exc_info=True)
            return []
        run_id = turn.state.run_id
        found: list[events.RunEvent] = [
            _warning(run_id, report.warned[name], turns) for name, turns in report.warnings.items()
        ]
        found += [
            events.MemoryCompacted(run_id, c.block, len(c.archived), c.words_before, c.words_after)
            for c in report.compactions
        ]
        return found

    async def _finished(self, outcome: Outcome) -> None:
        self.outcome = outcome
        try:
            await self.turn.hooks.turn_finished(outcome)
        except Exception:
            log.warning(
                "a hook failed at the end of turn %s", self.turn.state.run_id, exc_info=True
            )

    async def collect(self) -> list[events.RunEvent]:
        return [event async for event in self.stream()]


def _warning(run_id: str, view: BlockView, turns: int) -> events.MemoryWarning:
    return events.MemoryWarning(
        run_id,
        view.name,
        view.percent_used,
        view.word_count,
        view.word_limit,
        turns,
        compaction.COMPACT_AFTER_TURNS,
    )
