"""An agent's memory items in the table: the only module that reads or writes them.

Every read and write takes the agent id and builds its keys from it, so one agent never
reaches another's memory. The caller has already checked that the agent is theirs.

An archival memory's id begins with its creation time in microseconds (13 hex digits), so
the id alone finds the item (`Archival#{timestamp}#{memory_id}`) without a lookup item.
"""

import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from api.memory.models import (
    ArchivalHashGuard,
    ArchivalMemory,
    CapacityWarning,
    CoreMemory,
    CoreMemoryChange,
    MemoryBlockDef,
)
from api.search import repository as search_repository
from api.search.engine import SearchEngine
from api.store import keys
from api.store.pages import query_all
from api.store.table import (
    PK,
    SK,
    TTL,
    AttrAbsent,
    AttrEquals,
    Check,
    Condition,
    ConditionFailed,
    Delete,
    Item,
    ItemAbsent,
    ItemExists,
    Key,
    Put,
    Sk,
    Table,
    TransactionCancelled,
    TxOp,
    all_of,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
_TIME_DIGITS = 13  # hex microseconds: enough until the year 2112
_MEMORY_ID = re.compile(r"[0-9a-f]{32}")

# The labels of a block's writes in a transaction, for reading which one was refused.
DEFINITION = "definition"
LINES = "lines"
# and an archival memory's
HASH_GUARD = "hash_guard"
ARCHIVAL = "archival"
SUPERSEDE = "supersede"
STILL_CURRENT = "still_current"


def _unchanged_since(previous_version: int | None) -> Condition:
    """Nobody wrote the block's lines since `previous_version` was read (None: since they
    were read as absent)."""
    return ItemAbsent() if previous_version is None else AttrEquals("version", previous_version)


# --- archival memory: ids, keys, and the writes made through the search engine ----------


def new_memory_id(created_at: datetime) -> str:
    micros = (created_at - EPOCH) // MICROSECOND
    return f"{micros:0{_TIME_DIGITS}x}{uuid.uuid4().hex[:19]}"


def created_at_of(memory_id: str) -> datetime | None:
    """The creation time written into an id by new_memory_id; None for any other string."""
    if _MEMORY_ID.fullmatch(memory_id) is None:
        return None
    return EPOCH + int(memory_id[:_TIME_DIGITS], 16) * MICROSECOND


def archival_key(agent_id: str, memory_id: str) -> Key | None:
    created_at = created_at_of(memory_id)
    if created_at is None:
        return None
    return keys.archival(agent_id, keys.timestamp(created_at.timestamp()), memory_id)


async def insert_archival(
    search: SearchEngine, memory: ArchivalMemory, vector_attributes: Item
) -> bool:
    """The memory (with its vector) and its hash guard in one transaction, searchable once
    it returns; False when the content is already stored (the guard exists). A transient
    conflict propagates for the caller to retry."""
    ops, item = archival_insert_ops(memory, vector_attributes)
    try:
        await search.commit(memory.agent_id, ops, upserts=[item])
    except TransactionCancelled as e:
        if e.refused(HASH_GUARD):
            return False
        raise
    return True


def archival_insert_ops(
    memory: ArchivalMemory, vector_attributes: Item, *, guard_of: str | None = None
) -> tuple[list[Put], Item]:
    """The writes that insert a memory (with its vector): its hash guard first (HASH_GUARD),
    refused when the text is stored already (with `guard_of`: unless the guard still names
    that memory, a superseded one whose text is true again), then the memory (ARCHIVAL); and
    the memory's item, for the search engine's change."""
    guard = ArchivalHashGuard(
        agent_id=memory.agent_id, content_hash=memory.content_hash, memory_id=memory.memory_id
    )
    item = {**memory.to_dynamo_item(), **vector_attributes}
    guarded = ItemAbsent() if guard_of is None else AttrEquals("memory_id", guard_of)
    return [
        Put(guard.to_dynamo_item(), condition=guarded, label=HASH_GUARD),
        Put(item, condition=ItemAbsent(), label=ARCHIVAL),
    ], item


def _current() -> Condition:
    return all_of(ItemExists(), AttrAbsent("superseded_by"))


def supersede_op(item: Item, *, at: datetime, by: str) -> tuple[Put, Item]:
    """The write that ends a memory's validity at `at`, replaced by the memory `by`, refused
    unless it is still current (SUPERSEDE); and its item as written (for the search engine's
    change)."""
    memory = ArchivalMemory.from_dynamo_item(item)
    ended = memory.model_copy(update={"superseded_at": at, "superseded_by": by})
    written = {**item, **ended.to_dynamo_item()}
    return Put(written, condition=_current(), label=SUPERSEDE), written


def still_current(agent_id: str, memory_id: str) -> Check:
    """A transaction's check that a memory exists and nothing has replaced it
    (STILL_CURRENT)."""
    key = archival_key(agent_id, memory_id)
    assert key is not None  # ids checked by the caller
    return Check(key, _current(), label=STILL_CURRENT)


DELETED = "deleted"  # the label of a restore's removal of a deleted memory's copy
_COPY_ONLY = ("deleted_at", TTL)


def _deleted_copy(item: Item, *, deleted_at: float, until: int) -> Item:
    """A deleted memory's item as kept for a restore: everything it held (its vector too),
    under its own key and entity, gone from every read once `until` (epoch seconds) has
    passed, so nothing has to sweep it."""
    memory = ArchivalMemory.from_dynamo_item(item)
    key = keys.deleted_archival(memory.agent_id, memory.memory_id)
    return {
        **item,
        **key.as_item(),
        keys.ENTITY: keys.DELETED_ARCHIVAL,
        "deleted_at": deleted_at,
        TTL: until,
    }


def _restored_item(copy: Item) -> Item:
    """The memory's item again, exactly as it was stored, from its deleted copy."""
    item = {k: v for k, v in copy.items() if k not in _COPY_ONLY}
    item[keys.ENTITY] = keys.ARCHIVAL_MEMORY
    memory = ArchivalMemory.from_dynamo_item(item)
    return {**item, **memory.key().as_item()}


async def delete_archival(
    search: SearchEngine, item: Item, *, deleted_at: float, until: int
) -> None:
    """The memory (its stored `item`) and its guard, so the same text can be stored again
    later, with a copy restorable until `until`. The guard goes only while it still names
    this memory. Never found by a search once this returns."""
    memory = ArchivalMemory.from_dynamo_item(item)
    guard_key = keys.archival_hash_guard(memory.agent_id, memory.content_hash)
    removed = [memory.key().sk]
    copy = Put(_deleted_copy(item, deleted_at=deleted_at, until=until))
    try:
        await search.commit(
            memory.agent_id,
            [
                Delete(memory.key()),
                Delete(
                    guard_key,
                    condition=AttrEquals("memory_id", memory.memory_id),
                    label=HASH_GUARD,
                ),
                copy,
            ],
            removed=removed,
        )
    except TransactionCancelled as e:
        if not e.refused(HASH_GUARD):
            raise
        await search.commit(memory.agent_id, [Delete(memory.key()), copy], removed=removed)


def restore_archival_ops(copy: Item) -> tuple[list[TxOp], Item]:
    """The writes that bring a deleted memory back from its copy: its guard (HASH_GUARD,
    refused when the same text was stored again meanwhile), the memory as it was
    (ARCHIVAL), and the copy's removal (DELETED, refused once another restore took it or
    its window passed); and the memory's item, for the search engine's change."""
    item = _restored_item(copy)
    memory = ArchivalMemory.from_dynamo_item(item)
    guard = ArchivalHashGuard(
        agent_id=memory.agent_id, content_hash=memory.content_hash, memory_id=memory.memory_id
    )
    return [
        Put(guard.to_dynamo_item(), condition=ItemAbsent(), label=HASH_GUARD),
        Put(item, condition=ItemAbsent(), label=ARCHIVAL),
        Delete(
            keys.deleted_archival(memory.agent_id, memory.memory_id),
            condition=ItemExists(),
            label=DELETED,
        ),
    ], item


class MemoryRepository:
    """An agent's memory: its blocks with their line history and capacity warnings, and its
    archival memories with their hash guards."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def _query_all(self, query: keys.Query, *, forward: bool = True) -> list[Item]:
        pk, sk = query
        return await query_all(self.table, pk, sk=sk, forward=forward)

    # --- blocks ------------------------------------------------------------------------

    async def get_block(
        self, agent_id: str, block: str
    ) -> tuple[MemoryBlockDef | None, CoreMemory | None]:
        """A block's definition and content, read together."""
        def_key = keys.memory_block_def(agent_id, block)
        found = await self.table.batch_get([def_key, keys.core_memory(agent_id, block)])
        definition = core = None
        for item in found:
            if item[keys.ENTITY] == keys.MEMORY_BLOCK_DEF:
                definition = MemoryBlockDef.from_dynamo_item(item)
            else:
                core = CoreMemory.from_dynamo_item(item)
        return definition, core

    async def list_blocks(self, agent_id: str) -> list[tuple[MemoryBlockDef, CoreMemory | None]]:
        """Every block of the agent in name order, with its content when it has any."""
        found, _ = await self.blocks_and_warnings(agent_id)
        return found

    async def blocks_and_warnings(
        self, agent_id: str
    ) -> tuple[list[tuple[MemoryBlockDef, CoreMemory | None]], dict[str, int]]:
        """The blocks as `list_blocks` gives them and the warned turns per block (blocks
        without a warning left out), in one query (a turn waits for it before the LLM): a
        block's few items."""
        definitions: list[MemoryBlockDef] = []
        cores: dict[str, CoreMemory] = {}
        warnings: dict[str, int] = {}
        for item in await self._query_all(keys.blocks_and_warnings_of(agent_id)):
            entity = item.get(keys.ENTITY)
            if entity == keys.MEMORY_BLOCK_DEF:
                definitions.append(MemoryBlockDef.from_dynamo_item(item))
            elif entity == keys.CORE_MEMORY:
                core = CoreMemory.from_dynamo_item(item)
                cores[core.block_name] = core
            elif entity == keys.CAPACITY_WARNING:
                warning = CapacityWarning.from_dynamo_item(item)
                warnings[warning.block_name] = warning.warning_turns
        return [(d, cores.get(d.block_name)) for d in definitions], warnings

    async def create_block(self, definition: MemoryBlockDef, core: CoreMemory) -> bool:
        """Both items or neither; False when the block already exists."""
        try:
            await self.table.transact_write(
                [
                    Put(definition.to_dynamo_item(), condition=ItemAbsent(), label=DEFINITION),
                    Put(core.to_dynamo_item(), condition=ItemAbsent(), label=LINES),
                ]
            )
        except TransactionCancelled as e:
            if e.refused(DEFINITION) or e.refused(LINES):
                return False
            raise
        return True

    async def save_block(
        self,
        definition: MemoryBlockDef,
        core: CoreMemory,
        *,
        previous_version: int | None,
        change: CoreMemoryChange | None = None,
    ) -> None:
        """A block's definition and lines together, if the definition still exists (refused:
        DEFINITION) and nobody wrote the lines since `previous_version` was read (refused: LINES;
        None: read as absent); with the change that made the lines' new version, when they
        changed."""
        condition = (
            ItemAbsent() if previous_version is None else AttrEquals("version", previous_version)
        )
        ops = [
            Put(definition.to_dynamo_item(), condition=ItemExists(), label=DEFINITION),
            Put(core.to_dynamo_item(), condition=condition, label=LINES),
        ]
        if change is not None:
            ops.append(Put(change.to_dynamo_item()))
        await self.table.transact_write(ops)

    async def save_core(
        self, core: CoreMemory, *, previous_version: int | None, change: CoreMemoryChange
    ) -> None:
        """Write the block's lines if unchanged since read, with the change that made them, in
        one transaction; ConditionFailed tells the caller to read again."""
        try:
            await self.table.transact_write(
                [
                    Put(
                        core.to_dynamo_item(),
                        condition=_unchanged_since(previous_version),
                        label=LINES,
                    ),
                    Put(change.to_dynamo_item()),
                ]
            )
        except TransactionCancelled as e:
            if e.refused(LINES):
                raise ConditionFailed(f"[{core.block_name}] was written meanwhile.") from None
            raise

    async def delete_block(
        self,
        agent_id: str,
        block: str,
        *,
        version: int | None,
        created_at: datetime | None = None,
    ) -> None:
        """The block; with `version`, only while its lines are at that version (refused: LINES).
        Then its line history (that of the block made at `created_at`, so never the history of
        a block made again under the name meanwhile), a page at a time; what a crash leaves of
        it is never read again, and goes with the agent."""
        lines_condition = None if version is None else AttrEquals("version", version)
        await self.table.transact_write(
            [
                Delete(keys.memory_block_def(agent_id, block), label=DEFINITION),
                Delete(keys.core_memory(agent_id, block), condition=lines_condition, label=LINES),
                Delete(keys.capacity_warning(agent_id, block)),
            ]
        )
        pk, sk = keys.core_memory_changes_of(agent_id, block, created_at)
        while True:
            # Always the first page: what was deleted is gone, so no cursor is needed.
            page = await self.table.query(pk, sk=sk, limit=100)
            if not page.items:
                return
            await self.table.batch_write(deletes=[Key(item[PK], item[SK]) for item in page.items])

    async def changes_page(
        self,
        agent_id: str,
        block: str,
        created_at: datetime | None,
        *,
        limit: int,
        cursor: str | None = None,
    ) -> tuple[list[CoreMemoryChange], str | None]:
        """A page of the line history of the block made at `created_at`, newest first."""
        pk, sk = keys.core_memory_changes_of(agent_id, block, created_at)
        page = await self.table.query(pk, sk=sk, forward=False, limit=limit, cursor=cursor)
        return [CoreMemoryChange.from_dynamo_item(item) for item in page.items], page.cursor

    async def changes_from(
        self, agent_id: str, block: str, created_at: datetime | None, *, version: int
    ) -> list[CoreMemoryChange]:
        """The block's changes from `version` on, oldest first: what a restore undoes."""
        pk, _ = keys.core_memory_changes_of(agent_id, block, created_at)
        low = keys.core_memory_change(agent_id, block, created_at, max(version, 0)).sk
        high = keys.core_memory_change(agent_id, block, created_at, keys.MAX_BLOCK_VERSION).sk
        items = await query_all(self.table, pk, sk=Sk.between(low, high))
        return [CoreMemoryChange.from_dynamo_item(item) for item in items]

    async def oldest_change(
        self, agent_id: str, block: str, created_at: datetime | None
    ) -> CoreMemoryChange | None:
        """The first change the block's history holds (blocks older than their history
        have versions before it that it never saw)."""
        pk, sk = keys.core_memory_changes_of(agent_id, block, created_at)
        page = await self.table.query(pk, sk=sk, limit=1)
        return CoreMemoryChange.from_dynamo_item(page.items[0]) if page.items else None

    # --- capacity warnings -------------------------------------------------------------

    async def add_warning_turn(self, agent_id: str, block: str) -> int:
        """One more warned turn, counted atomically; the count after it."""
        warning = CapacityWarning(agent_id=agent_id, block_name=block)
        identity = {
            name: value
            for name, value in warning.to_dynamo_item().items()
            if name not in (PK, SK, "warning_turns")
        }
        item = await self.table.update(
            warning.key(), set_if_absent=identity, add={"warning_turns": 1}
        )
        return CapacityWarning.from_dynamo_item(item).warning_turns

    async def restore_warning(self, warning: CapacityWarning) -> bool:
        """A block's warned turns as an imported agent had them; False when it has some already."""
        try:
            await self.table.put(warning.to_dynamo_item(), condition=ItemAbsent())
        except ConditionFailed:
            return False
        return True

    async def reset_warning(self, agent_id: str, block: str) -> None:
        await self.table.delete(keys.capacity_warning(agent_id, block))

    # --- archival memory ---------------------------------------------------------------

    async def archival_items(self, agent_id: str, memory_ids: Sequence[str]) -> dict[str, Item]:
        """The stored items (vectors included) of these memories that exist, by id."""
        wanted = [k for k in (archival_key(agent_id, i) for i in dict.fromkeys(memory_ids)) if k]
        found = await self.table.batch_get(wanted) if wanted else []
        return {item["memory_id"]: item for item in found}

    async def archival_guards(
        self, agent_id: str, content_hashes: Sequence[str]
    ) -> dict[str, ArchivalHashGuard]:
        """The hash guards that exist among these, by hash: one batch read."""
        found = await self.table.batch_get(
            [keys.archival_hash_guard(agent_id, h) for h in content_hashes]
        )
        guards = (ArchivalHashGuard.from_dynamo_item(item) for item in found)
        return {guard.content_hash: guard for guard in guards}

    async def get_archival(self, agent_id: str, memory_id: str) -> ArchivalMemory | None:
        key = archival_key(agent_id, memory_id)
        item = await self.table.get(key) if key is not None else None
        return ArchivalMemory.from_dynamo_item(item) if item else None

    async def archival_guard(self, agent_id: str, content_hash: str) -> ArchivalHashGuard | None:
        item = await self.table.get(keys.archival_hash_guard(agent_id, content_hash))
        return ArchivalHashGuard.from_dynamo_item(item) if item else None

    async def delete_guard(
        self, agent_id: str, content_hash: str, *, condition: Condition | None = None
    ) -> None:
        await self.table.delete(
            keys.archival_hash_guard(agent_id, content_hash), condition=condition
        )

    async def deleted_archival(self, agent_id: str, memory_id: str) -> Item | None:
        """A deleted memory's copy while it can be restored (None once its window passed, or
        for a string that is no memory id)."""
        if _MEMORY_ID.fullmatch(memory_id) is None:
            return None
        return await self.table.get(keys.deleted_archival(agent_id, memory_id))

    async def archival_page(
        self, agent_id: str, *, limit: int, cursor: str | None = None
    ) -> tuple[list[ArchivalMemory], str | None]:
        """Newest first."""
        pk, sk = keys.archival_of(agent_id)
        page = await self.table.query(pk, sk=sk, forward=False, limit=limit, cursor=cursor)
        return [ArchivalMemory.from_dynamo_item(item) for item in page.items], page.cursor

    async def archival_items_page(
        self, agent_id: str, *, limit: int, cursor: str | None = None
    ) -> tuple[list[tuple[ArchivalMemory, Item]], str | None]:
        """Oldest first, each memory with its stored item (which carries its vector, if any):
        what an export reads a page at a time."""
        pk, sk = keys.archival_of(agent_id)
        page = await self.table.query(pk, sk=sk, limit=limit, cursor=cursor)
        return [(ArchivalMemory.from_dynamo_item(item), item) for item in page.items], page.cursor

    # --- the whole agent ---------------------------------------------------------------

    async def delete_all(self, search: SearchEngine, agent_id: str) -> int:
        """Every item under `Agent#{agent_id}`, for a deleted agent; how many were deleted.
        What search finds goes first, through the change log, so that no replica finds any of
        it while the rest goes (the version and the log go last)."""
        deleted = 0
        # Read as the engine reads an agent's searchable items when it loads its index.
        searchable = search_repository.SearchRepository(self.table).searchable(agent_id)
        async for found in searchable:
            await search.remove(agent_id, [Key(item[PK], item[SK]) for item in found])
            deleted += len(found)
        pk = keys.agent_partition(agent_id)
        while True:
            # Always the first page: what was deleted is gone, so no cursor is needed.
            page = await self.table.query(pk, limit=100)
            if not page.items:
                return deleted
            await self.table.batch_write(deletes=[Key(item[PK], item[SK]) for item in page.items])
            deleted += len(page.items)
