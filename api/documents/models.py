"""A document, the guard that keeps one copy of a file per agent, the passages waiting to be
indexed, and the passages the agent's search finds (kind `passage`, api/search/documents.py)."""

from datetime import datetime
from typing import Literal

from api.kit.model import ApiModel
from api.search import vectors
from api.search.vectors import Vector
from api.store import keys
from api.store.entity import Entity
from api.store.table import Item, Key

MediaType = Literal["text/plain", "text/markdown", "text/html", "application/pdf"]
DocumentState = Literal["processing", "ready", "failed", "deleting"]
# The run id of a document an import writes: its passages come from the file, not from a
# worker, and an import cut short is finished by importing the file again.
IMPORT_RUN = "docrun_import_"


class Document(Entity):
    """An uploaded file of an agent: what it is, where its processing stands (`state`, the
    `run_id` of its processing) and how many passages it gave."""

    ENTITY = keys.DOCUMENT

    agent_id: str
    document_id: str
    file_name: str
    media_type: MediaType
    content_hash: str  # sha256 of the file's bytes: one copy per agent
    size_bytes: int
    pages: int | None = None  # a PDF's
    passages: int = 0
    state: DocumentState = "processing"
    run_id: str
    error: str | None = None
    attempts: int = 0
    created_at: datetime
    updated_at: datetime

    def key(self) -> Key:
        return keys.document(self.agent_id, self.document_id)

    @property
    def imported(self) -> bool:
        return self.run_id.startswith(IMPORT_RUN)


class DocumentHashGuard(Entity):
    """Names the document holding a file's bytes; written with the document, so that the
    same file uploaded twice to one agent is one document."""

    ENTITY = keys.DOCUMENT_HASH_GUARD

    agent_id: str
    content_hash: str
    document_id: str

    def key(self) -> Key:
        return keys.document_hash_guard(self.agent_id, self.content_hash)


class PassageText(ApiModel):
    """One passage as the split made it, before it has a vector."""

    content: str
    page: int | None = None
    heading: str | None = None


class DocumentText(Entity):
    """A share of an upload's passages, kept until the background processing has indexed
    them (a queue message could not carry them: an SQS message holds 256 KB)."""

    ENTITY = keys.DOCUMENT_TEXT

    agent_id: str
    document_id: str
    n: int
    passages: list[PassageText]

    def key(self) -> Key:
        return keys.document_text(self.agent_id, self.document_id, self.n)


class Passage(Entity):
    """A searchable passage: its text (its heading path first, so that a search by a
    section's name finds it), its place, and its vector beside it (`vectors.attributes`)."""

    ENTITY = keys.PASSAGE

    agent_id: str
    document_id: str
    number: int
    file_name: str
    content: str
    page: int | None = None
    heading: str | None = None
    created_at: datetime

    def key(self) -> Key:
        return keys.passage(self.agent_id, self.document_id, self.number)

    @classmethod
    def of(
        cls, document: Document, number: int, content: str, page: int | None, heading: str | None
    ) -> "Passage":
        """The `number`th passage of `document` (from its upload's split, or an import)."""
        return cls(
            agent_id=document.agent_id,
            document_id=document.document_id,
            number=number,
            file_name=document.file_name,
            content=content,
            page=page,
            heading=heading,
            created_at=document.created_at,
        )

    def item_with(self, vector: Vector | None, model_id: str | None) -> Item:
        return {**self.to_dynamo_item(), **vectors.attributes(vector, model_id)}
