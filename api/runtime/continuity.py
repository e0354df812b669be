"""The continuity hook (seed 001's MemoryHookProvider): saves every message of a turn as it
is added, and at initialization puts the session's last K turns into the system prompt.

A turn is a user message and what followed it. Only the turns of the speaking actor count;
expired messages are never read (the store treats them as absent on both engines)."""

import asyncio
from collections.abc import Sequence

from api.conversations.messages import repository as messages
from api.conversations.messages import service as message_service
from api.conversations.messages.models import Said
from api.runtime.hooks import AgentInitialized, HookProvider, MessageAdded, TurnFinished
from api.search.engine import SearchEngine

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


def render(recent: Sequence[Said]) -> str:
    """Seed 001's form: `role: text` per line, what was said only (tool traffic left out)."""
    lines = [
        # Later lines of a message are indented: a message cannot pass for another speaker.
        f"{m.role}: {m.content.strip().replace(chr(10), chr(10) + '  ')}"
        f"{' (interrupted)' if m.interrupted else ''}"
        for m in recent
        if m.role in ("user", "assistant") and m.content.strip()
    ]
    return "Recent conversation:\n" + "\n".join(lines) if lines else ""


class ContinuityHook(HookProvider):
    def __init__(self, search: SearchEngine) -> None:
        self.search = search
        self.table = search.table
        self._copies: dict[str, list[asyncio.Task[None]]] = {}  # per run: searchable copies

    async def on_agent_initialized(self, event: AgentInitialized) -> None:
        state = event.state
        # The first page is read alongside the agent, sized for the default K: most
        # agents keep it, so the turn waits for one round of reads, not two.
        first_page = asyncio.ensure_future(
            messages.newest_said(
                self.table,
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
            page, cursor = await messages.newest_said(
                self.table,
                state.conversation_id,
                limit=MESSAGES_PER_TURN * (k - collector.turns),
                cursor=cursor,
            )
        section = render(collector.messages())
        if section:
            event.sections.append(section)

    async def on_message_added(self, event: MessageAdded) -> None:
        state = event.state
        if event.ends_turn and not event.written_with:
            copying = await message_service.store_answer(
                self.search, state.user_email, state.agent_id, event.message
            )
        else:
            copying = await message_service.store(
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
