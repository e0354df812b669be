"""Agents in the table: the agent item and the guard that makes its name unique per user."""

from collections.abc import AsyncIterator, Sequence
from datetime import datetime

from api.agents.models import Agent, AgentNameGuard
from api.store import keys
from api.store.pages import query_all, scan_pages
from api.store.table import (
    PK,
    SK,
    AllOf,
    AttrAbsent,
    AttrEquals,
    ConditionFailed,
    Delete,
    ItemAbsent,
    ItemExists,
    Put,
    Table,
    TxOp,
    Update,
)

# The labels of an agent's writes in a transaction, for reading which one was refused.
AGENT = "agent"
NAME_GUARD = "name_guard"  # the guard of the name the agent takes
USED = "agent_used"  # a turn's note of the agent's last use
LAST_USED = "last_used_at"
DOCUMENTS = "documents"  # how many documents it holds, moved by their writes, never by a save


def used_op(email: str, agent_id: str, at: datetime) -> Update:
    """A transaction's write of the agent's last use, `at` (a turn's end), while the agent
    exists (refused, USED, once it is deleted: never an agent made of one attribute)."""
    return Update(
        keys.agent(email, agent_id),
        set={LAST_USED: at.isoformat()},
        condition=ItemExists(),
        label=USED,
    )


def documents_op(email: str, agent_id: str, delta: int) -> Update:
    """The agent's count of documents moved by `delta`, in the transaction that makes or
    deletes one, while the agent exists (refused, AGENT, once it is deleted): a turn learns
    from the agent it reads anyway whether to offer `retrieve`, with no read of its own."""
    return Update(
        keys.agent(email, agent_id),
        add={DOCUMENTS: delta},
        condition=ItemExists(),
        label=AGENT,
    )


class AgentRepository:
    """Agents, each found by its owner and id or through the guard of its name."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def get(self, email: str, agent_id: str) -> Agent | None:
        item = await self.table.get(keys.agent(email, agent_id))
        return Agent.from_dynamo_item(item) if item else None

    async def list_for(self, email: str) -> list[Agent]:
        pk, sk = keys.agents_of(email)
        return [
            Agent.from_dynamo_item(i) for i in await query_all(self.table, pk, sk=sk, limit=100)
        ]

    async def every_agent(self) -> AsyncIterator[Agent]:
        """Every agent of every user, for admin commands (a scan of the whole table)."""
        async for page in scan_pages(self.table, entity=keys.AGENT, limit=500):
            for item in page:
                yield Agent.from_dynamo_item(item)

    async def guard_of(self, email: str, normalized_name: str) -> AgentNameGuard | None:
        item = await self.table.get(keys.agent_name_guard(email, normalized_name))
        return AgentNameGuard.from_dynamo_item(item) if item else None

    async def create(self, agent: Agent, guard: AgentNameGuard, also: Sequence[TxOp] = ()) -> None:
        """Both or neither, with `also` (a lookup item naming the agent, with its own label);
        TransactionCancelled, NAME_GUARD refused, when the name is taken (AGENT: the agent
        exists)."""
        await self.table.transact_write(
            [
                Put(guard.to_dynamo_item(), condition=ItemAbsent(), label=NAME_GUARD),
                Put(agent.to_dynamo_item(), condition=ItemAbsent(), label=AGENT),
                *also,
            ]
        )

    async def save(
        self,
        agent: Agent,
        *,
        old_guard: AgentNameGuard | None = None,
        new_guard: AgentNameGuard | None = None,
    ) -> None:
        """The agent as the next version of the one read, moving its name guard when the name
        changes. TransactionCancelled: AGENT refused, someone saved first; NAME_GUARD, the name
        is taken."""
        # Every attribute but the last use and the count of documents, which turns and
        # uploads write meanwhile: a save puts back what was read of everything else, never
        # those.
        item = agent.to_dynamo_item()
        kept = (PK, SK, LAST_USED, DOCUMENTS)
        fields = {k: v for k, v in item.items() if k not in kept}
        unset = [k for k, v in agent.model_dump().items() if v is None and k not in kept]
        ops: list[Update | Put | Delete] = [
            Update(
                agent.key(),
                set=fields,
                remove=unset,
                condition=AttrEquals("version", agent.version - 1),
                label=AGENT,
            )
        ]
        if old_guard is not None and new_guard is not None:
            ops += [
                Delete(old_guard.key(), condition=AttrEquals("agent_id", agent.agent_id)),
                Put(new_guard.to_dynamo_item(), condition=ItemAbsent(), label=NAME_GUARD),
            ]
        await self.table.transact_write(ops)

    async def mark_used(self, email: str, agent_id: str, at: datetime) -> bool:
        """`used_op` written on its own (a turn whose closing transaction was refused);
        False when the agent is gone."""
        op = used_op(email, agent_id, at)
        try:
            await self.table.update(op.key, set=op.set, condition=op.condition)
        except ConditionFailed:
            return False
        return True

    async def set_earlier_use(self, email: str, agent_id: str, at: datetime) -> bool:
        """The last use of an agent stored before agents kept it, found by the upgrade of
        the table's layout, unless a turn has written one since (or the agent is gone)."""
        try:
            await self.table.update(
                keys.agent(email, agent_id),
                set={LAST_USED: at.isoformat()},
                condition=AllOf((ItemExists(), AttrAbsent(LAST_USED))),
            )
        except ConditionFailed:
            return False
        return True

    async def delete(self, agent: Agent, guard: AgentNameGuard) -> None:
        """The agent and its name, as last read (TransactionCancelled if it changed or went)."""
        await self.table.transact_write(
            [
                Delete(agent.key(), condition=AttrEquals("version", agent.version)),
                Delete(guard.key(), condition=AttrEquals("agent_id", agent.agent_id)),
            ]
        )
