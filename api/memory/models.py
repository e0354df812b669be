from datetime import datetime
from typing import Literal, get_args

from pydantic import Field

from api.store import keys
from api.store.entity import Entity
from api.store.table import Key

DEFAULT_WORD_LIMIT = 5000


class MemoryBlockDef(Entity):
    ENTITY = keys.MEMORY_BLOCK_DEF

    agent_id: str
    block_name: str
    description: str = ""
    word_limit: int = Field(default=DEFAULT_WORD_LIMIT, ge=1)
    char_limit: int | None = Field(default=None, ge=1)  # seed 004's, beside the word limit
    is_default: bool = False
    created_at: datetime | None = None  # None: created before blocks kept their times

    def key(self) -> Key:
        return keys.memory_block_def(self.agent_id, self.block_name)


class CoreMemory(Entity):
    """A block's lines; `version` guards every rewrite (optimistic concurrency)."""

    ENTITY = keys.CORE_MEMORY

    agent_id: str
    block_name: str
    lines: list[str] = Field(default_factory=list)
    word_count: int = 0
    version: int = 0
    updated_at: datetime | None = None  # the last write; None: before blocks kept times

    def key(self) -> Key:
        return keys.core_memory(self.agent_id, self.block_name)


Category = Literal["fact", "pattern", "preference", "capability"]  # seed 003's
CATEGORIES: tuple[Category, ...] = get_args(Category)


class ArchivalMemory(Entity):
    ENTITY = keys.ARCHIVAL_MEMORY

    agent_id: str
    memory_id: str
    content: str
    content_hash: str
    created_at: datetime
    category: Category | None = None  # seed 003: what kind of knowledge it is
    context: str | None = None  # seed 003: when or why it matters
    confidence: float | None = None  # seed 003: 0.0 to 1.0
    tags: list[str] = Field(default_factory=list)  # seed 004: who said it (`user`, ...)

    def key(self) -> Key:
        ts = keys.timestamp(self.created_at.timestamp())
        return keys.archival(self.agent_id, ts, self.memory_id)


class ArchivalHashGuard(Entity):
    """Seed 000's separate index item for deduplication by content hash."""

    ENTITY = keys.ARCHIVAL_HASH_GUARD

    agent_id: str
    content_hash: str
    memory_id: str

    def key(self) -> Key:
        return keys.archival_hash_guard(self.agent_id, self.content_hash)


class CapacityWarning(Entity):
    ENTITY = keys.CAPACITY_WARNING

    agent_id: str
    block_name: str
    warning_turns: int = 0

    def key(self) -> Key:
        return keys.capacity_warning(self.agent_id, self.block_name)
