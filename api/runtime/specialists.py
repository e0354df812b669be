"""Seed 001's multi-agent pattern: an agent (the orchestrator) asks its specialists, other
agents of the same owner, through a tool each (`ask_<name>`).

Calling one runs the specialist's own turn through the same runtime as any turn: its
architecture, its provider (the owner's settings), its model and memory, the hooks
injected as always. Its actor is the orchestrator (its agent id) and its session is
derived from the orchestrator's (`<session>/via/<orchestrator id>`), so the specialist
remembers what it was asked earlier in this conversation and nothing of another. Its
events reach the orchestrator's client as `nested` events as they happen; its answer is
the tool's reply. It is bounded: its own step limit, and SPECIALIST_SECONDS within the
time of the turn that asked. A failure, a timeout or a stop is a reply saying so, never a
failed turn of the orchestrator. The specialist's run is a run like any (journaled, its
messages stored by its hooks, ended as interrupted by the sweep if its process dies)."""

import asyncio
import contextlib
import math
import re
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING

from api.agents.models import Agent
from api.agents.service import AgentNotFound
from api.agents.specialists import MAX_DEPTH
from api.conversations import service as conversations
from api.errors import AppError, public_body
from api.journal import events
from api.llm.types import ToolCall, ToolSpec
from api.runtime.request import TurnRequest, Via
from api.runtime.state import TurnState
from api.runtime.toolbox import ToolReply, TurnTool
from api.tools.native.base import schema

if TYPE_CHECKING:  # the runtime builds these tools: imported for their types only
    from api.runtime.runner import PreparedTurn, Runtime

PREFIX = "ask_"
MAX_TOOL_NAME = 64  # what every provider takes: ^[a-zA-Z0-9_-]{1,64}$
MAX_DESCRIPTION = 1000


def session_of(state: TurnState) -> str:
    """The specialist's session for the orchestrator's: one per orchestrator and session."""
    return f"{state.session_id}/via/{state.agent_id}"


def tool_names(agents: Sequence[Agent]) -> list[str]:
    """`ask_<name>` for each agent, in the providers' tool-name characters, each unique."""
    names: list[str] = []
    for agent in agents:
        base = re.sub(r"[^a-zA-Z0-9_-]+", "_", agent.agent_name.strip()).strip("_").lower()
        base = (PREFIX + (base or "agent"))[:MAX_TOOL_NAME]
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base[: MAX_TOOL_NAME - len(str(n)) - 1]}_{n}"
        names.append(name)
    return names


def routing(tools: Sequence["AskSpecialist"]) -> str:
    """The paragraph of the orchestrator's system prompt that says whom it may ask."""
    lines = [f"- {t.name}: {t.specialist.agent_name}" for t in tools]
    return "\n".join(
        [
            "You work with specialists: other agents, each with its own memory. Route each "
            "request to the specialist whose field it is by calling its tool with what they "
            "need to know; answer the person yourself with what they reply. Specialists:",
            *lines,
        ]
    )


class AskSpecialist(TurnTool):
    """One specialist, as a tool of the orchestrator's turn `asking`."""

    def __init__(
        self,
        runtime: "Runtime",
        specialist: Agent,
        name: str,
        asking: TurnState,
        via: Via,
    ) -> None:
        self.runtime = runtime
        self.specialist = specialist
        self.asking = asking
        self.via = via  # the specialist's place: depth, the agents above, the deadline
        about = specialist.agent_persona.strip() or f"The agent {specialist.agent_name}."
        self.spec = ToolSpec(
            name=name,
            description=f"Ask {specialist.agent_name}, a specialist agent, and get its answer. "
            f"{about}"[:MAX_DESCRIPTION],
            parameters=schema(
                {
                    "request": {
                        "type": "string",
                        "description": "What to ask, with what the specialist needs to know.",
                    }
                },
                ["request"],
            ),
        )

    async def stream(self, call: ToolCall) -> AsyncGenerator[events.RunEvent | ToolReply, None]:
        who = self.specialist.agent_name
        asked = call.arguments.get("request")
        if not isinstance(asked, str) or not asked.strip():
            yield ToolReply(f"Invalid arguments for {self.name}: 'request' is required.")
            return
        started = asyncio.get_running_loop().time()
        deadline = min(self.via.deadline, started + self.runtime.settings.specialist_seconds)
        try:
            prepared = await self._prepare(asked, deadline)
        except AppError as e:  # a store's failure says no more than it says to a client
            yield ToolReply(f"{who} could not be asked: {public_body(e)['message']}")
            return
        told: asyncio.Queue[events.RunEvent | None] = asyncio.Queue()

        async def run() -> None:
            try:
                async with contextlib.aclosing(prepared.stream()) as produced:
                    async for event in produced:
                        told.put_nowait(event)
            finally:
                told.put_nowait(None)

        # Its own task, so that its time can run out without cancelling the turn that asked;
        # stopped, it ends as any turn stopped (what it said is kept, marked interrupted).
        running = asyncio.ensure_future(run())
        seen: list[events.RunEvent] = []
        timed_out = False
        try:
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        event = await told.get()
                except TimeoutError:
                    timed_out = True
                    break
                if event is None:
                    break
                seen.append(event)
                yield self._nested(call, event)
        finally:
            if not running.done():
                running.cancel()
            await _outlast(running)
        if timed_out:
            # What it told before it stopped, then its end, as its journal keeps it.
            while not told.empty():
                event = told.get_nowait()
                if event is not None:
                    seen.append(event)
                    yield self._nested(call, event)
            if any(isinstance(e, events.RunCompleted) for e in seen):  # ended as time ran out
                yield ToolReply(_reply(who, seen))
                return
            for event in events.interrupted(prepared.turn.state.run_id):
                yield self._nested(call, event)
            yield ToolReply(
                f"{who} did not answer in time ({deadline - started:.3g} s): its turn was "
                "stopped. Answer without it, or ask again with a simpler request."
            )
            return
        yield ToolReply(_reply(who, seen))

    async def _prepare(self, asked: str, deadline: float) -> "PreparedTurn":
        runtime, asking = self.runtime, self.asking
        session_id = session_of(asking)
        # Read again: one deleted since the orchestrator's turn began is gone, and no
        # conversation may be opened under it.
        specialist = await runtime.repos.agents.get(asking.user_email, self.specialist.agent_id)
        if specialist is None:
            raise AgentNotFound("No agent with that id.")
        found = await conversations.find_session(
            runtime.repos, asking.user_email, self.specialist.agent_id, session_id
        )
        conversation_id = await conversations.open_session(
            runtime.repos, specialist, session_id, runtime.clock, found=found
        )
        request = TurnRequest(
            user_email=asking.user_email,
            agent_id=self.specialist.agent_id,
            conversation_id=conversation_id,
            actor_id=asking.agent_id,
            session_id=session_id,
            prompt=asked,
            via=Via(self.via.depth, self.via.ancestors, deadline),
        )
        return await runtime.prepare(request, agent=specialist)  # read just now

    def _nested(self, call: ToolCall, event: events.RunEvent) -> events.Nested:
        run_id = self.asking.run_id
        if isinstance(event, events.Nested):  # a specialist's own specialist: as it was told
            return events.Nested(
                run_id, event.agent_id, event.depth, event.call_id, event.event, event.payload
            )
        return events.Nested(
            run_id, self.specialist.agent_id, self.via.depth, call.id, event.EVENT, event.data()
        )


def _reply(who: str, seen: Sequence[events.RunEvent]) -> str:
    """The tool's reply from how the specialist's run ended."""
    final = next((e for e in reversed(seen) if isinstance(e, events.FinalMessage)), None)
    if any(isinstance(e, events.RunCompleted) for e in seen) and final is not None:
        return final.content
    error = next((e for e in seen if isinstance(e, events.RunError)), None)
    if error is not None and error.code != events.INTERRUPTED:
        return f"{who} failed to answer: {error.message} ({error.code})"
    return f"{who}'s turn stopped before it answered."


async def _outlast(task: "asyncio.Future[None]") -> None:
    """Wait for the specialist's turn to end (it stores what it produced), through any
    cancellation of the turn that asked, which is raised again once it has."""
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            cancelled = True
    if not task.cancelled():
        task.exception()  # retrieved: its failure ended it as failed already
    if cancelled:
        raise asyncio.CancelledError


def tools_for(
    runtime: "Runtime", agent: Agent, state: TurnState, via: Via | None, found: Sequence[Agent]
) -> list[AskSpecialist]:
    """The tools of a turn of `agent` for the specialists `found` of it: none past the depth
    limit, and none for an agent already asking above (a loop left by two saves racing)."""
    depth = via.depth if via else 0
    above = (*via.ancestors, agent.agent_id) if via else (agent.agent_id,)
    if depth >= MAX_DEPTH:
        return []
    offered = [s for s in found if s.agent_id not in above]
    # Each call's own budget is set when it is made, within the deadline of a turn that
    # has one (a specialist's); a person's turn has none.
    child = Via(depth + 1, above, via.deadline if via else math.inf)
    return [
        AskSpecialist(runtime, s, name, state, child)
        for s, name in zip(offered, tool_names(offered), strict=True)
    ]
