"""The continuity hook (seed 001's MemoryHookProvider): saves every message of a turn as it
is added, and at initialization puts the session's last K turns into the system prompt.

A turn is a user message and what followed it. Only the turns of the speaking actor count;
expired messages are never read (the store treats them as absent on both engines)."""

import asyncio
from collections.abc import Sequence

from api.conversations.messages import repository as messages
from api.conversations.messages import service as message_service
from api.conversations.messages.models import Message, Said
from api.journal import sources
from api.journal.closing import ClosingWrite
from api.journal.models import RECENT_CONVERSATION, Source
from api.repositories import Repositories
from api.runtime.hooks import AgentInitialized, HookProvider, MessageAdded, TurnFinished
from api.runtime.state import TurnState
from api.search.engine import SearchEngine
from api.store.table import Item, TxOp

DEFAULT_RECENT_TURNS = 10
MESSAGES_PER_TURN = 4  # a question, a tool call, its result and the answer: a first guess


class TurnCollector:
    """Gathers the last `k` turns of one actor from messages read newest first."""

    def __init__(self, actor_id: str, k: int) -> None:
        self.actor_id = actor_id
        self.k = k
        self.turns = 0
        self._newest_first: list[Said] = []

    @property
    def full(self) -> bool:
        return self.turns >= self.k

    def feed(self, page: Sequence[Said]) -> bool:
        """Take a page; True once `k` turns are complete (the page may hold older ones)."""
        for message in page:
            if message.actor_id != self.actor_id:
                continue
            if self.full:
                return True
            self._newest_first.append(message)
            if message.role == "user":
                self.turns += 1
        return self.full

    def messages(self) -> list[Said]:
        """The turns, oldest first; an unfinished oldest turn (its question not reached)
        is left out."""
        kept = list(reversed(self._newest_first))
        while kept and kept[0].role != "user":
            kept.pop(0)
        return kept


def shown(recent: Sequence[Said]) -> list[Said]:
    """What the section shows of the recent messages: what was said (tool traffic left out)."""
    return [m for m in recent if m.role in ("user", "assistant") and m.content.strip()]


def render(recent: Sequence[Said]) -> str:
    """Seed 001's form: `role: text` per line, what was said only (tool traffic left out)."""
    lines = [
        # Later lines of a message are indented: a message cannot pass for another speaker.
        f"{m.role}: {m.content.strip().replace(chr(10), chr(10) + '  ')}"
        f"{' (interrupted)' if m.interrupted else ''}"
        for m in shown(recent)
    ]
    return "Recent conversation:\n" + "\n".join(lines) if lines else ""


class ContinuityHook(HookProvider):
    def __init__(self, repos: Repositories, search: SearchEngine) -> None:
        self.repos = repos
        self.search = search
        self._copies: dict[str, list[asyncio.Task[None]]] = {}  # per run: searchable copies

    async def on_agent_initialized(self, event: AgentInitialized) -> None:
        state = event.state
        if not state.conversation_id:  # a context preview outside any conversation
            return
        # The first page is read alongside the agent, sized for the default K: most
        # agents keep it, so the turn waits for one round of reads, not two.
        first_page = asyncio.ensure_future(
            self.repos.messages.newest_said(
                state.conversation_id,
                limit=MESSAGES_PER_TURN * DEFAULT_RECENT_TURNS,
                cursor=None,
            )
        )
        # Once not needed, its outcome is never read: do not let a failure go unretrieved.
        first_page.add_done_callback(lambda f: f.cancelled() or f.exception())
        try:
            agent = await event.agent()
        except BaseException:
            first_page.cancel()
            raise
        k = agent.recent_turns
        if k == 0:
            first_page.cancel()
            return
        page, cursor = await first_page
        collector = TurnCollector(state.actor_id, k)
        while not collector.feed(page) and cursor is not None:
            page, cursor = await self.repos.messages.newest_said(
                state.conversation_id,
                limit=MESSAGES_PER_TURN * (k - collector.turns),
                cursor=cursor,
            )
        recent = collector.messages()
        section = render(recent)
        if section:
            event.sections.append(section)
            event.sources += [
                Source(
                    kind="message",
                    id=m.message_id,
                    via=RECENT_CONVERSATION,
                    preview=sources.preview(m.content),
                    conversation_id=state.conversation_id,
                )
                for m in shown(recent)
            ]

    async def on_message_added(self, event: MessageAdded) -> None:
        state = event.state
        if event.closing is not None and event.ends_turn and not event.written_with:
            # The answer: nothing of the turn follows it but the run's end, which carries it.
            event.closing.add(_Said(self.repos, self.search, state, event.message, stored=False))
            return
        if event.closing is not None and event.written_with:
            # The question, with the run's opening; its copy goes with the run's end.
            await self.repos.messages.add(event.message, written_with=event.written_with)
            if message_service.searchable(event.message):
                event.closing.add(_Said(self.repos, self.search, state, event.message, stored=True))
            return
        if event.ends_turn and not event.written_with:
            copying = await message_service.store_answer(
                self.repos, self.search, state.user_email, state.agent_id, event.message
            )
        else:
            copying = await message_service.store(
                self.repos,
                self.search,
                state.user_email,
                state.agent_id,
                event.message,
                written_with=event.written_with,
            )
        if copying is not None:
            self._copies.setdefault(event.state.run_id, []).append(copying)

    async def on_turn_finished(self, event: TurnFinished) -> None:
        """The turn's messages are searchable before it says it is done."""
        copies = self._copies.pop(event.state.run_id, [])
        if copies:
            await asyncio.wait(copies)  # waits without cancelling them if we are cancelled


class _Said(ClosingWrite):
    """A message of the turn in the transaction that ends its run: the answer with its
    searchable copy, or the copy of the question (`stored` when the turn began). Its vector
    is made meanwhile; one still not made then (a slow remote embedder) does not hold the
    run's end up: the copy is written after it, as any message's is."""

    def __init__(
        self,
        repos: Repositories,
        search: SearchEngine,
        state: TurnState,
        message: Message,
        *,
        stored: bool,
    ):
        self.repos = repos
        self.search = search
        self.owner = state.user_email
        self.agent_id = state.agent_id
        self.message = message
        self.stored = stored
        self.vector: asyncio.Future[Item] | None = None
        if message_service.searchable(message):
            self.vector = asyncio.ensure_future(message_service.vector_of(search, message))
            # Its failure is seen where its copy is written, or by nobody (written apart).
            self.vector.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.late = False

    async def writes(self) -> tuple[list[TxOp], list[Item]]:
        vector = self.vector
        if vector is not None and not vector.done():
            await asyncio.wait({vector}, timeout=message_service.ANSWER_WAITS_FOR_VECTOR_SECONDS)
        if vector is None:
            return ([] if self.stored else [messages.put_op(self.message)]), []
        made = vector.done() and vector.exception() is None
        self.late = not made
        # A late vector still leaves a copy without it in the run's end: a client that hears
        # the run completed finds the message listed and found by its words; its meaning
        # comes with the copy written again once the vector is made.
        recall = message_service.copy_item(
            self.agent_id, self.message, vector.result() if made else {}
        )
        if self.stored:
            return messages.copy_ops(self.owner, self.message, recall), [recall]
        return messages.recorded_ops(self.owner, [self.message], [recall]), [recall]

    def written(self) -> None:
        if self.late:
            self.search.in_background(self._copy())

    async def alone(self) -> None:
        if self.stored:
            await self._copy()
        else:
            await message_service.store_answer(
                self.repos, self.search, self.owner, self.agent_id, self.message
            )

    async def _copy(self) -> None:
        await message_service.write_copy(
            self.search, self.owner, self.agent_id, self.message, self.vector
        )
