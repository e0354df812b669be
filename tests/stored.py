"""What a test reads back of an agent's storage all at once (the product reads pages)."""

from api.memory import repository
from api.memory.models import ArchivalMemory
from api.store.table import Table

PAGE = 100


async def all_archival(table: Table, agent_id: str) -> list[ArchivalMemory]:
    """Every archival memory, newest first."""
    found: list[ArchivalMemory] = []
    cursor: str | None = None
    while True:
        page, cursor = await repository.archival_items_page(
            table, agent_id, limit=PAGE, cursor=cursor
        )
        found += [memory for memory, _ in page]
        if cursor is None:
            return found[::-1]
