"""/agents/{agent_id}/documents: an agent's documents (upload, list, get, delete) and a search
among their passages. Every route loads the agent through OwnedAgent: another tenant's agent
is a 404, and so is a document of another agent."""

from typing import Annotated

from fastapi import File, Form, Query, Response, UploadFile, status

from api.agents.service import AgentNotFound
from api.documents import service as documents
from api.documents.errors import (
    DocumentBusy,
    DocumentEmpty,
    DocumentEncrypted,
    DocumentHasNoText,
    DocumentNotFound,
    DocumentTooLarge,
    DocumentTooManyPages,
    DocumentTooManyPassages,
    DocumentUnreadable,
    UnsupportedDocumentType,
)
from api.documents.schemas import DocumentList, DocumentOut, PassageSearchOut
from api.documents.service import EmptyQuery
from api.embeddings.base import EmbeddingError
from api.http.contract.errors import errors
from api.http.deps.agents import OwnedAgent
from api.http.deps.app import ReposDep, SearchDep
from api.http.deps.documents import DocumentsDep
from api.http.query import SearchQuery
from api.http.route_filter import Router
from api.search.engine import SearchBusy, SemanticSearchUnavailable
from api.search.index import Mode as SearchMode
from api.search.params import ConflictingQuery

router = Router(
    prefix="/agents/{agent_id}/documents", tags=["documents"], responses=errors(AgentNotFound)
)
# The upload's body may be a document and its multipart framing (RequestLimits' `larger`).
UPLOAD_PATH = r"/agents/[^/]+/documents"
MULTIPART_OVERHEAD = 64 * 1024


@router.post(
    "",
    operation_id="documents_upload",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        200: {"model": DocumentOut, "description": "The agent holds this file already"},
        **errors(
            DocumentBusy,
            SearchBusy,
            DocumentEmpty,
            DocumentTooLarge,
            UnsupportedDocumentType,
            DocumentUnreadable,
            DocumentEncrypted,
            DocumentHasNoText,
            DocumentTooManyPages,
            DocumentTooManyPassages,
        ),
    },
)
async def upload(
    agent: OwnedAgent,
    file: Annotated[UploadFile, File(description="A text, Markdown, HTML or PDF file")],
    response: Response,
    repos: ReposDep,
    processor: DocumentsDep,
    file_name: Annotated[
        str | None, Form(max_length=255, description="Its name, if not the file's own")
    ] = None,
) -> DocumentOut:
    """The file becomes a document of the agent: read and split into passages now (a file
    the service cannot take is refused, and nothing is stored), embedded and indexed in
    the background (202, `state: processing`; GET it until `ready` or `failed`). The same
    file again is the same document (200)."""
    data = await file.read(processor.settings.document_max_bytes + 1)
    uploaded = await documents.upload(
        repos,
        processor,
        agent,
        file_name or file.filename or "document",
        file.content_type,
        data,
    )
    if not uploaded.created:
        response.status_code = status.HTTP_200_OK
    return DocumentOut.of(uploaded.document)


@router.get("", operation_id="documents_list")
async def list_documents(agent: OwnedAgent, repos: ReposDep) -> DocumentList:
    """The agent's documents, newest first."""
    found = await documents.list_documents(repos, agent.agent_id)
    return DocumentList(documents=[DocumentOut.of(d) for d in found])


@router.get(
    "/search",
    operation_id="documents_search",
    responses=errors(EmptyQuery, ConflictingQuery, SemanticSearchUnavailable, EmbeddingError),
)
async def search_documents(
    agent: OwnedAgent,
    search: SearchDep,
    query: SearchQuery,
    limit: Annotated[int, Query(ge=1, le=50)] = 5,
    mode: SearchMode | None = None,
) -> PassageSearchOut:
    """The passages of the agent's documents that best match, best first, each with its
    source (file name, page or heading path): what `retrieve` gives the model. `mode`:
    hybrid (the default with an embedding backend), lexical or semantic."""
    found = await documents.search(search, agent.agent_id, query, limit=limit, mode=mode)
    return PassageSearchOut.of(found)


@router.get("/{document_id}", operation_id="documents_get", responses=errors(DocumentNotFound))
async def get_document(
    agent: OwnedAgent, document_id: str, repos: ReposDep, processor: DocumentsDep
) -> DocumentOut:
    """The document and where its processing stands."""
    return DocumentOut.of(await documents.get(repos, processor, agent.agent_id, document_id))


@router.delete(
    "/{document_id}",
    operation_id="documents_delete",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=errors(DocumentNotFound, SearchBusy),
)
async def delete_document(
    agent: OwnedAgent, document_id: str, repos: ReposDep, search: SearchDep
) -> None:
    """The document and its passages: once this returns, no search on any replica finds
    them."""
    await documents.delete(repos, search, agent, document_id)
