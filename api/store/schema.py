"""Which layout of data a table holds, by number, so that an upgrade keeps what is stored.

A table carries one schema version item. At start-up a server reads it: a table of an
older layout is migrated forward, one step at a time, and stamped; a table written by a
newer release (a layout this one does not know) is refused with a clear message rather
than misread. Replicas starting together stamp it once (a conditional write). A table from
before the item existed holds layout 1, the first released one (version 0 below).

The store counts layouts; what a step changes is the domains' business: the steps live in
`api/maintenance/layout.py`, over the repositories, and the assembly hands them in."""

from collections.abc import Awaitable, Callable, Mapping

from api.store import keys
from api.store.table import AttrEquals, ConditionFailed, ItemAbsent, StoreError, Table

# 1: the first released layout. 2: conversations keep their last activity (and sort by it
# in gsi1), agents their last use.
SCHEMA_VERSION = 2
# A step takes a table from layout N to N + 1; steps are given by N. From 0 to 1 there is
# nothing to change, only to stamp. A step must be safe to run twice, and while serving:
# replicas starting together may both run it before one stamps the table.
Step = Callable[[], Awaitable[None]]


class NewerSchema(StoreError):
    code = "newer_schema"


async def stored_version(table: Table) -> int:
    item = await table.get(keys.schema_version())
    return int(item["version"]) if item else 0


async def ensure_current(table: Table, release: str, steps: Mapping[int, Step]) -> int:
    """The table at SCHEMA_VERSION, migrated from an older layout by `steps` if need be;
    NewerSchema for a table of a layout this release does not know. The version found."""
    found = await stored_version(table)
    if found > SCHEMA_VERSION:
        raise NewerSchema(
            f"The table {table.name!r} holds data of layout {found}, written by a newer "
            f"release; this one ({release}) reads layouts up to {SCHEMA_VERSION}. Run the "
            "newer release, or restore a backup made before the upgrade."
        )
    for layout in range(found, SCHEMA_VERSION):
        migrate = steps.get(layout)
        if migrate is not None:
            await migrate()
    if found < SCHEMA_VERSION:
        item = {
            **keys.schema_version().as_item(),
            keys.ENTITY: keys.SCHEMA_VERSION,
            "version": SCHEMA_VERSION,
            "written_by": release,
        }
        condition = ItemAbsent() if found == 0 else AttrEquals("version", found)
        try:
            await table.put(item, condition=condition)
        except ConditionFailed:  # another replica stamped it meanwhile: look again
            await ensure_current(table, release, steps)
    return found
