from datetime import datetime
from typing import Annotated

from pydantic import ConfigDict, Field, StringConstraints

from api.kit.forms import Form
from api.kit.model import ApiModel
from api.kit.text import BlockName
from api.memory.archival import Match
from api.memory.blocks import MAX_BLOCK_NAME, MAX_WORD_LIMIT
from api.memory.models import DEFAULT_WORD_LIMIT, ArchivalMemory, Category
from api.memory.service import BlockView, LineChange
from api.search.index import Mode as SearchMode


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


class ArchivalOut(ApiModel):
    id: str
    content: str
    content_hash: str
    created_at: datetime
    category: Category | None
    context: str | None
    confidence: float | None
    tags: list[str]

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
        )


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
