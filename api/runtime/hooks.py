"""Hook providers: what the runtime injects into every architecture (seed 001). A provider
overrides the events it cares about; the runtime fires them, in the order the providers
were registered, for every architecture alike.

- `on_agent_initialized`: before the first LLM call. A provider may add sections to the
  system prompt (the continuity hook adds the recent conversation), and names the memories
  and messages it put there (`sources`: what the turn's `context.used` event lists).
  Providers run concurrently here, with the runtime's own reads, so that the turn waits
  for one round.
- `on_message_added`: after each message of the turn is made (user, assistant, tool call
  and tool result), in order, one provider after another. The continuity hook saves it
  (the answer, with the run's end: see `MessageAdded.closing`).
- `on_turn_finished`: once, with how the turn ended.
"""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from api.agents.models import Agent
from api.conversations.messages.models import Message
from api.journal.closing import Closing
from api.journal.models import Source
from api.runtime.state import TurnState
from api.store.table import TxOp

log = logging.getLogger(__name__)


@dataclass
class AgentInitialized:
    state: TurnState
    load_agent: Callable[[], Awaitable[Agent]]
    prompt: str = ""  # the person's message: what a recall hook searches by
    sections: list[str] = field(default_factory=list)  # appended to the system prompt
    # The memories and past messages those sections hold, with their ids (and scores, for
    # what a search found): the turn's record of what it used.
    sources: list[Source] = field(default_factory=list)

    async def agent(self) -> Agent:
        """The agent, read concurrently with the hooks: await it only when needed."""
        return await self.load_agent()


@dataclass(frozen=True)
class MessageAdded:
    state: TurnState
    message: Message
    # Writes the provider that stores the message (the continuity hook) makes in the same
    # transaction: the run's opening rides on the user's message, one store round, not two.
    written_with: tuple[TxOp, ...] = ()
    # The turn's answer: nothing of the turn follows it but its end (the continuity hook
    # writes it, with its searchable copy, in the transaction that ends the run).
    ends_turn: bool = False
    # What the transaction that ends the run carries: a provider may add its writes (the
    # continuity hook adds the answer, and the question's searchable copy). None where no
    # run is journaled.
    closing: Closing | None = None


@dataclass(frozen=True)
class TurnFinished:
    state: TurnState
    outcome: Literal["completed", "failed", "interrupted"]


class HookProvider:
    async def on_agent_initialized(self, event: AgentInitialized) -> None:
        return None

    async def on_message_added(self, event: MessageAdded) -> None:
        return None

    async def on_turn_finished(self, event: TurnFinished) -> None:
        return None


class Hooks:
    """The providers of one turn, fired together."""

    def __init__(
        self, providers: Sequence[HookProvider], state: TurnState, closing: Closing | None = None
    ) -> None:
        self.providers = tuple(providers)
        self.state = state
        self.closing = closing
        self.sources: list[Source] = []  # what the providers put in the prompt, in order
        # Each provider's sections with the sources they hold, in order: the context
        # preview tells the recent conversation from what a provider recalled.
        self.added: list[tuple[list[str], list[Source]]] = []
        self._last: asyncio.Future[None] | None = None

    async def agent_initialized(
        self, load_agent: Callable[[], Awaitable[Agent]], prompt: str = ""
    ) -> list[str]:
        """The sections the providers add to the system prompt, in registration order."""
        events = [AgentInitialized(self.state, load_agent, prompt) for _ in self.providers]
        # Every provider runs to its end, so that none is left working after a failure.
        results = await asyncio.gather(
            *(p.on_agent_initialized(e) for p, e in zip(self.providers, events, strict=True)),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result
        self.sources = [source for event in events for source in event.sources]
        self.added = [(event.sections, event.sources) for event in events]
        return [section for event in events for section in event.sections]

    def add_soon(
        self, message: Message, *, written_with: Sequence[TxOp] = (), ends_turn: bool = False
    ) -> "asyncio.Future[None]":
        """Start adding a message without waiting for it (the user's message, while the LLM
        call starts). Messages are still added one after another, in order: the next one
        waits for this one, and so do `message_added` and `settled`. `written_with`: writes
        to make in the same transaction as the message (see MessageAdded)."""
        previous = self._last

        async def add() -> None:
            if previous is not None:
                await previous
            event = MessageAdded(self.state, message, tuple(written_with), ends_turn, self.closing)
            for provider in self.providers:
                await provider.on_message_added(event)

        self._last = asyncio.ensure_future(add())
        return self._last

    async def message_added(self, message: Message, *, ends_turn: bool = False) -> None:
        """Runs to the end even if the turn is cancelled meanwhile (the client left): a
        message half-added would be stored for some providers and not others."""
        done = self.add_soon(message, ends_turn=ends_turn)
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            await _outlast(done)
            raise

    async def settled(self) -> None:
        """Every message started has been added (or its failure is raised here)."""
        if self._last is not None:
            await asyncio.shield(self._last)

    async def turn_finished(self, outcome: Literal["completed", "failed", "interrupted"]) -> None:
        event = TurnFinished(self.state, outcome)
        for provider in self.providers:
            await provider.on_turn_finished(event)


async def _outlast(work: "asyncio.Future[None]") -> None:
    """Wait for `work` through any number of cancellations; its failure is logged, since
    the cancellation is what the caller goes on with."""
    while not work.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({work})
    if not work.cancelled() and work.exception() is not None:
        log.error("adding a message failed while the turn was cancelled", exc_info=work.exception())
