from datetime import datetime
from typing import Annotated

from pydantic import ConfigDict, Field, StringConstraints

from api.kit.forms import Form
from api.kit.model import ApiModel
from api.kit.text import BlockName
from api.memory import validity
from api.memory.archival import ArchivalInsert, Match
from api.memory.blocks import MAX_BLOCK_NAME, MAX_WORD_LIMIT
from api.memory.models import (
    DEFAULT_WORD_LIMIT,
    ArchivalMemory,
    Category,
    ChangeSource,
    CoreMemoryChange,
    LineAction,
)
from api.memory.service import BlockView, LineChange
from api.search.index import Mode as SearchMode
from api.search.params import Since

MAX_SUPERSEDES = 20  # memories one write replaces, at most
MemoryId = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class BlockOut(ApiModel):
    name: str
    description: str
    word_limit: int
    is_default: bool
    lines: list[str]
    word_count: int
    percent_used: int
    warning: bool = Field(description="At or above 80% of the word limit")
    version: int = Field(
        description="Moves on with every change; send it back in If-Match to write only "
        "what you read (also the ETag header)"
    )

    @classmethod
    def of(cls, block: BlockView) -> "BlockOut":
        return cls(
            version=block.version,
            name=block.name,
            description=block.description,
            word_limit=block.word_limit,
            is_default=block.is_default,
            lines=list(block.lines),
            word_count=block.word_count,
            percent_used=block.percent_used,
            warning=block.needs_warning,
        )


class BlockCreate(ApiModel):
    model_config = ConfigDict(extra="forbid")

    name: BlockName = Field(min_length=1, max_length=MAX_BLOCK_NAME)
    description: str = Field(default="", max_length=500)
    word_limit: int = Field(default=DEFAULT_WORD_LIMIT, strict=True, ge=1, le=MAX_WORD_LIMIT)
    content: str = Field(
        default="",
        description="Initial lines, one per line",
        json_schema_extra={"format": "multiline"},
    )


class LineIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, description="The line's text")


class LineChangeOut(ApiModel):
    block: BlockOut
    line_number: int = Field(description="The line this concerns (1-based)")
    line: str = Field(description="The line as stored, or as it was for a delete")
    previous: str | None = Field(description="The line a replace replaced")
    changed: bool = Field(description="False when the block already said this (no change)")

    @classmethod
    def of(cls, change: LineChange) -> "LineChangeOut":
        return cls(
            block=BlockOut.of(change.block),
            line_number=change.line_number,
            line=change.line,
            previous=change.previous,
            changed=change.changed,
        )


class BlockUpdate(ApiModel):
    model_config = ConfigDict(extra="forbid")

    description: str | None = Field(default=None, max_length=500)
    word_limit: int | None = Field(default=None, strict=True, ge=1, le=MAX_WORD_LIMIT)
    lines: list[str] | None = Field(default=None, description="Replaces every line")


class LineHistoryOut(ApiModel):
    version: int = Field(description="The block's version this change made")
    at: datetime
    source: ChangeSource = Field(description="What made it")
    action: LineAction
    line_number: int | None = Field(
        description="The line appended, replaced or deleted (1-based); null for a rewrite"
    )
    old_line: str | None = Field(description="The line replaced or deleted")
    new_line: str | None = Field(description="The line appended, or the replacement")
    removed: list[str] = Field(description="A rewrite's lines that went")
    added: list[str] = Field(description="A rewrite's new lines")
    run_id: str | None = Field(
        default=None, description="The turn whose tool made it (`source` `tool`); else null"
    )
    restored_from: int | None = Field(
        default=None, description="A restore: the version whose lines it brought back"
    )

    @classmethod
    def of(cls, change: CoreMemoryChange) -> "LineHistoryOut":
        return cls(
            version=change.version,
            at=change.at,
            source=change.source,
            action=change.action,
            line_number=change.line_number,
            old_line=change.old_line,
            new_line=change.new_line,
            removed=change.removed,
            added=change.added,
            run_id=change.run_id,
            restored_from=change.restored_from,
        )


class BlockHistoryPage(ApiModel):
    changes: list[LineHistoryOut]
    cursor: str | None = Field(description="Continues the listing; null at its end")


MAX_CONTEXT_CHARS = 2000
MAX_TAGS = 16
Tag = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]


# Strict: `true` is not a confidence, nor is "0.5" (JSON numbers, integers included, are).
Confidence = Annotated[float, Field(ge=0.0, le=1.0, strict=True, description="0.0 to 1.0")]


class ArchivalCreate(ApiModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, json_schema_extra={"format": "multiline"})
    category: Category | None = Field(default=None, description="Seed 003's kind of knowledge.")
    context: str | None = Field(
        default=None, max_length=MAX_CONTEXT_CHARS, description="When or why it matters."
    )
    confidence: Confidence | None = None
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    valid_from: Since | None = Field(
        default=None, description="When it became true (a date or a date and time); default: now."
    )
    supersedes: list[MemoryId] = Field(
        default_factory=list,
        max_length=MAX_SUPERSEDES,
        description="Ids of memories it replaces: each kept, ended when this one became true.",
    )


class ArchivalOut(ApiModel):
    id: str
    content: str
    content_hash: str
    created_at: datetime
    category: Category | None
    context: str | None
    confidence: float | None
    tags: list[str]
    valid_from: datetime = Field(description="When it became true (its creation, unless given).")
    superseded_at: datetime | None = Field(
        default=None, description="When it stopped being true; null while it is current."
    )
    superseded_by: str | None = Field(default=None, description="The memory that replaced it.")

    @classmethod
    def of(cls, memory: ArchivalMemory) -> "ArchivalOut":
        return cls(
            id=memory.memory_id,
            content=memory.content,
            content_hash=memory.content_hash,
            created_at=memory.created_at,
            category=memory.category,
            context=memory.context,
            confidence=memory.confidence,
            tags=memory.tags,
            valid_from=memory.valid_since,
            superseded_at=memory.superseded_at,
            superseded_by=memory.superseded_by,
        )


class ArchivalWriteOut(ArchivalOut):
    replaced: list[ArchivalOut] = Field(
        default_factory=list, description="Memories this one replaced, as they are now."
    )
    not_replaced: list[ArchivalOut] = Field(
        default_factory=list,
        description="Memories it was asked to replace that another write had replaced first.",
    )
    notes: list[str] = Field(
        default_factory=list, description="The replacements, as a person reads them."
    )

    @classmethod
    def of_insert(cls, inserted: ArchivalInsert) -> "ArchivalWriteOut":
        return cls(
            **ArchivalOut.of(inserted.memory).model_dump(),
            replaced=[ArchivalOut.of(m) for m in inserted.replaced],
            not_replaced=[ArchivalOut.of(m) for m in inserted.not_replaced],
            notes=validity.replacement_lines(inserted),
        )


class SupersedeRequest(ApiModel):
    model_config = ConfigDict(extra="forbid")

    by: MemoryId = Field(description="The current memory that replaces this one.")


class RestoreVersion(ApiModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1, le=10**12 - 1, description="The version whose lines to restore")


class ArchivalPage(ApiModel):
    memories: list[ArchivalOut]
    cursor: str | None
    total: int | None = Field(
        default=None, description="Every memory of the categories listed (with `category`)."
    )


class ArchivalHitOut(ArchivalOut):
    score: float = Field(description="What the mode ranks by: fused (hybrid), BM25 or cosine.")
    similarity: float | None = Field(
        description="Cosine similarity to the query; null when the memory has no vector of "
        "the server's embedding model or the search was lexical."
    )

    @classmethod
    def of_match(cls, match: Match) -> "ArchivalHitOut":
        return cls(
            **ArchivalOut.of(match.memory).model_dump(),
            score=match.score,
            similarity=match.similarity,
        )


class ArchivalSearchOut(ApiModel):
    query: str
    page: int
    pages: int
    total: int
    mode: SearchMode
    memories: list[ArchivalHitOut]


class MemoryForms(ApiModel):
    """The forms of the memory inspector, from the models that validate their POSTs."""

    block: Form = Field(description="POST /blocks: a new block's definition and lines")
    archival: Form = Field(description="POST /archival: a new archival memory")
