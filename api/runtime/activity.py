"""A turn's mark on what it ran in, part of the transaction that ends its run: the time it
ended as its conversation's last activity (its `updated_at`, and its place at the top of
its agent's conversations; and whether it awaits the person's answer) and as its agent's
last use (the order of the agents list). No write of its own: a turn still writes three
times."""

from datetime import UTC, datetime

from api.agents import repository as agent_items
from api.conversations import repository as conversation_items
from api.journal.closing import ClosingWrite
from api.kit.clock import Clock
from api.repositories import Repositories
from api.runtime.state import TurnState
from api.store.table import Item, TxOp


class Activity(ClosingWrite):
    def __init__(
        self, repos: Repositories, clock: Clock, state: TurnState, *, awaiting_user: bool
    ) -> None:
        self.repos = repos
        self.clock = clock
        self.owner = state.user_email
        self.agent_id = state.agent_id
        self.conversation_id = state.conversation_id
        self.awaiting_user = awaiting_user  # it ended with a question for the person
        self.at: datetime | None = None

    def _at(self) -> datetime:
        # Taken once, when the closing is put together: written together or apart, the
        # conversation and the agent say the same time.
        if self.at is None:
            self.at = datetime.fromtimestamp(self.clock.now(), UTC)
        return self.at

    async def writes(self) -> tuple[list[TxOp], list[Item]]:
        at = self._at()
        return [
            conversation_items.active_op(
                self.owner,
                self.agent_id,
                self.conversation_id,
                at,
                awaiting_user=self.awaiting_user,
            ),
            agent_items.used_op(self.owner, self.agent_id, at),
        ], []

    async def alone(self) -> None:
        # Each on its own condition: a conversation being deleted keeps its place, an agent
        # deleted is not brought back as a bare item.
        at = self._at()
        await self.repos.conversations.mark_active(
            self.owner, self.agent_id, self.conversation_id, at, awaiting_user=self.awaiting_user
        )
        await self.repos.agents.mark_used(self.owner, self.agent_id, at)
