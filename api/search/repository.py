"""How indexes stay in step with the table, across every process that shares it.

Each agent has a version item (`SearchVersion`) and a change log (`SearchChange#{n}`).
Every write of something searchable is one transaction that also moves the version from
n to n+1 (conditioned on it still being n) and puts change n+1, naming the sort keys of the
items it wrote or deleted. So:

- a process that last saw version n reads the version item (one small read per search)
  and, if it moved to m, reads changes n+1..m and re-reads the items they name: exactly
  what changed, whichever process wrote it;
- a change the log no longer holds (they expire after CHANGE_DAYS) or a version that went
  backwards (the agent was deleted) means a full reload;
- versions are dense, so a gap cannot hide: m - n changes must be found.

The version's condition makes concurrent writers of one agent take turns: the loser reads
the version and tries again, which a process avoids for its own consecutive writes by
remembering the version it wrote.
"""

from collections.abc import AsyncIterator, Sequence

from api.store import keys
from api.store.pages import pages as store_pages
from api.store.pages import query_all
from api.store.table import (
    SK,
    AttrEquals,
    Condition,
    Item,
    ItemAbsent,
    Key,
    Put,
    Table,
    TransactionCancelled,
    TxOp,
    Update,
)

CHANGE_DAYS = 7
CHANGE_TTL_SECONDS = CHANGE_DAYS * 86400
LOAD_PAGE = 2000  # items read at a time when an index loads
MAX_CHANGE_KEYS = 90  # a change and its writes fit in one transaction (100 operations)
VERSION = "search_version"  # the label of the version's move, which no caller's write takes


class VersionMoved(Exception):
    """Another writer changed the agent's searchable items first: read the version again."""


def searchable_queries(agent_id: str) -> tuple[keys.Query, ...]:
    """The queries that read every archival memory, message copy and document passage of
    the agent."""
    return keys.archival_of(agent_id), keys.message_recalls_of(agent_id), keys.passages_of(agent_id)


class SearchRepository:
    """The search index's items: each agent's version and change log, and its searchable items."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def version(self, agent_id: str) -> int:
        item = await self.table.get(keys.search_version(agent_id))
        return int(item["version"]) if item else 0

    async def changes(self, agent_id: str, first: int, last: int) -> list[list[str]] | None:
        """The sort keys each change from `first` to `last` touched; None when the log no longer
        holds all of them."""
        pk, sk = keys.search_changes_between(agent_id, first, last)
        found = await query_all(self.table, pk, sk=sk)
        if len(found) != last - first + 1:
            return None
        return [list(item.get("refs", [])) for item in found]

    async def items(self, agent_id: str, sks: Sequence[str]) -> dict[str, Item]:
        """The live items among these sort keys of the agent's partition."""
        pk = keys.agent_partition(agent_id)
        found = await self.table.batch_get([Key(pk, sk) for sk in dict.fromkeys(sks)])
        return {item[SK]: item for item in found}

    def pages(self, query: keys.Query) -> AsyncIterator[list[Item]]:
        pk, sk = query
        return store_pages(self.table, pk, sk=sk, limit=LOAD_PAGE)

    async def searchable(self, agent_id: str) -> AsyncIterator[list[Item]]:
        """Every archival memory, message copy and passage of the agent, a page at a time (so that a
        large agent is never held as items all at once)."""
        for query in searchable_queries(agent_id):
            async for page in self.pages(query):
                yield page

    async def commit(
        self,
        agent_id: str,
        ops: Sequence[TxOp],
        touched: Sequence[str],
        *,
        expected: int,
        now: float,
    ) -> int:
        """`ops` and change expected+1 naming `touched`, all or nothing; the new version.

        VersionMoved when another writer got there first; TransactionCancelled when one of
        `ops` was refused (its condition), for the caller to read as before."""
        condition: Condition = ItemAbsent() if expected == 0 else AttrEquals("version", expected)
        after = expected + 1
        bookkeeping: list[TxOp] = [
            Update(
                keys.search_version(agent_id),
                set={"version": after, keys.ENTITY: keys.SEARCH_VERSION},
                condition=condition,
                label=VERSION,
            ),
            Put(
                {
                    **keys.search_change(agent_id, after).as_item(),
                    keys.ENTITY: keys.SEARCH_CHANGE,
                    "refs": list(touched),
                    "ttl": int(now) + CHANGE_TTL_SECONDS,
                }
            ),
        ]
        try:
            await self.table.transact_write([*ops, *bookkeeping])
        except TransactionCancelled as e:
            if e.refused(VERSION) and not any(e.refused(op.label) for op in ops):
                raise VersionMoved from e
            raise
        return after
