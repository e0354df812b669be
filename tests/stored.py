"""What a test reads back of an agent's storage all at once (the product reads pages)."""

from api.memory.models import ArchivalMemory
from api.memory.repository import MemoryRepository

PAGE = 100


async def all_archival(memory: MemoryRepository, agent_id: str) -> list[ArchivalMemory]:
    """Every archival memory, newest first."""
    found: list[ArchivalMemory] = []
    cursor: str | None = None
    while True:
        page, cursor = await memory.archival_items_page(agent_id, limit=PAGE, cursor=cursor)
        found += [m for m, _ in page]
        if cursor is None:
            return found[::-1]
