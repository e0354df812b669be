"""What the documents' routes answer."""

from datetime import datetime

from pydantic import Field

from api.documents.models import Document, DocumentState, MediaType
from api.documents.service import PassageHit, PassageSearch
from api.kit.model import ApiModel
from api.search.index import Mode


class DocumentOut(ApiModel):
    id: str
    file_name: str
    media_type: MediaType
    content_hash: str = Field(description="sha256 of the file: one document per file and agent")
    size_bytes: int
    pages: int | None = Field(description="A PDF's pages; null for other types")
    passages: int = Field(description="How many passages it was split into, once ready")
    state: DocumentState = Field(
        description="`processing` (being embedded and indexed), then `ready` (found by "
        "`retrieve` and the search) or `failed` (see `error`)"
    )
    run_id: str = Field(description="Its processing's run")
    error: str | None = None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, document: Document) -> "DocumentOut":
        return cls(
            id=document.document_id,
            file_name=document.file_name,
            media_type=document.media_type,
            content_hash=document.content_hash,
            size_bytes=document.size_bytes,
            pages=document.pages,
            passages=document.passages,
            state=document.state,
            run_id=document.run_id,
            error=document.error,
            created_at=document.created_at,
            updated_at=document.updated_at,
        )


class DocumentList(ApiModel):
    documents: list[DocumentOut]


class PassageOut(ApiModel):
    document_id: str
    number: int = Field(description="Its place in the document, from 0")
    file_name: str
    page: int | None = Field(description="A PDF's page, from 1")
    heading: str | None = Field(description='A Markdown or HTML heading path: "Setup > Linux"')
    text: str = Field(description="The passage, its heading path first")
    score: float
    similarity: float | None

    @classmethod
    def of(cls, hit: PassageHit) -> "PassageOut":
        origin = hit.origin
        return cls(
            document_id=origin.document_id,
            number=origin.number,
            file_name=origin.file_name,
            page=origin.page,
            heading=origin.heading,
            text=hit.text,
            score=hit.score,
            similarity=hit.similarity,
        )


class PassageSearchOut(ApiModel):
    query: str
    total: int = Field(description="Every matching passage, not only those returned")
    mode: Mode
    passages: list[PassageOut]

    @classmethod
    def of(cls, found: PassageSearch) -> "PassageSearchOut":
        return cls(
            query=found.query,
            total=found.total,
            mode=found.mode,
            passages=[PassageOut.of(h) for h in found.hits],
        )
