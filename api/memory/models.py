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


# What wrote a block's lines: a model's tool in a turn, a tool called over MCP, a person or
# a client over a REST API (ours, seed 002's, seed 004's, an agent's persona), a seed 004
# memory run, or compaction moving old lines to archival memory.
ChangeSource = Literal["tool", "mcp", "rest", "memory_run", "compaction"]
LineAction = Literal["append", "replace", "delete", "rewrite"]


class CoreMemoryChange(Entity):
    """One version of a block's lines, as it came about: written in the same transaction
    as that version, so the history never misses or invents one. `append` has the new line,
    `delete` the old one, `replace` both, at `line_number`; a `rewrite` (a whole new set of
    lines: a PATCH, a persona, compaction) has the lines it removed and added instead.

    A version that only changed the definition (description, word limit) has none. Keyed
    by the block's `created_at` too, so a block deleted and made again under the same name
    starts a history of its own."""

    ENTITY = keys.CORE_MEMORY_CHANGE

    agent_id: str
    block_name: str
    block_created_at: datetime | None = None  # its definition's; None: an old block's
    version: int
    at: datetime
    source: ChangeSource
    action: LineAction
    line_number: int | None = None
    old_line: str | None = None
    new_line: str | None = None
    removed: list[str] = Field(default_factory=list)  # a rewrite's
    added: list[str] = Field(default_factory=list)
    # A rewrite's lines before it, in their order: `removed` and `added` alone cannot tell
    # the order back, and a restore must undo the rewrite exactly. None: a rewrite recorded
    # before rewrites kept them (a restore cannot go back across it).
    previous_lines: list[str] | None = None
    run_id: str | None = None  # the turn whose tool made the change
    restored_from: int | None = None  # a restore: the version whose lines it brought back

    def key(self) -> Key:
        return keys.core_memory_change(
            self.agent_id, self.block_name, self.block_created_at, self.version
        )


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
    # When it became true: a date its writer gave, or (None) when it was stored.
    valid_from: datetime | None = None
    # When it stopped being true, and the memory that says what is true since: both set
    # together, once, by a supersession; the memory itself stays.
    superseded_at: datetime | None = None
    superseded_by: str | None = None

    @property
    def valid_since(self) -> datetime:
        return self.valid_from or self.created_at

    @property
    def current(self) -> bool:
        return self.superseded_by is None

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
