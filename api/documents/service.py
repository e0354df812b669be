"""An agent's documents: upload (read and split now, so that a bad file is refused with
nothing stored; embedded and indexed in the background by `DocumentProcessor`), list, get,
delete, and search among their passages with the agent's one search engine."""

import asyncio
import contextlib
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from api.agents.models import Agent
from api.agents.repository import documents_op
from api.agents.service import AgentNotFound
from api.documents import reading
from api.documents.errors import DocumentBusy, DocumentNotFound
from api.documents.models import Document, DocumentHashGuard, DocumentText, PassageText
from api.documents.processing import DocumentProcessor
from api.documents.repository import DOCUMENT, HASH_GUARD, remove_passages
from api.errors import BadRequest
from api.kit.secrets import new_id
from api.repositories import Repositories
from api.search.documents import PassageOrigin
from api.search.engine import SearchEngine
from api.search.index import Filters, Mode
from api.store.table import TransactionCancelled

TEXT_BYTES = 300_000  # passages per waiting item: well under DynamoDB's 400 KB an item
MAX_DELETE_ATTEMPTS = 5


class EmptyQuery(BadRequest):
    code = "empty_query"


@dataclass(frozen=True)
class Uploaded:
    document: Document
    created: bool  # False: the agent held this file already, and this is its document


@dataclass(frozen=True)
class PassageHit:
    origin: PassageOrigin
    text: str
    score: float
    similarity: float | None


@dataclass(frozen=True)
class PassageSearch:
    query: str
    total: int
    mode: Mode
    hits: list[PassageHit]


def limits_of(processor: DocumentProcessor) -> reading.Limits:
    settings = processor.settings
    return reading.Limits(
        max_bytes=settings.document_max_bytes,
        max_pages=settings.document_max_pages,
        max_passages=settings.document_max_passages,
    )


def _now(processor: DocumentProcessor) -> datetime:
    return datetime.fromtimestamp(processor.clock.now(), UTC)


def _shares(agent_id: str, document_id: str, passages: list[PassageText]) -> list[DocumentText]:
    shares: list[DocumentText] = []
    share: list[PassageText] = []
    weight = 0
    for passage in passages:
        cost = 2 * len(passage.content.encode()) + 100
        if share and weight + cost > TEXT_BYTES:
            shares.append(
                DocumentText(
                    agent_id=agent_id, document_id=document_id, n=len(shares), passages=share
                )
            )
            share, weight = [], 0
        share.append(passage)
        weight += cost
    if share:
        shares.append(
            DocumentText(agent_id=agent_id, document_id=document_id, n=len(shares), passages=share)
        )
    return shares


def _read_and_hash(
    name: str, content_type: str | None, data: bytes, limits: reading.Limits
) -> tuple[reading.Read, str]:
    """Off the event loop, both: 20 ms of hashing for 10 MB, and the split."""
    return reading.read(name, content_type, data, limits), hashlib.sha256(data).hexdigest()


async def upload(
    repos: Repositories,
    processor: DocumentProcessor,
    agent: Agent,
    file_name: str,
    content_type: str | None,
    data: bytes,
) -> Uploaded:
    """The file as a document of the agent, its processing queued; the agent's document of
    the same bytes if it holds one (a failed one is replaced). A file refused raises its
    DocumentRefused and stores nothing."""
    name = " ".join(file_name.split())[:255] or "document"
    read, content_hash = await asyncio.to_thread(
        _read_and_hash, name, content_type, data, limits_of(processor)
    )
    for _ in range(MAX_DELETE_ATTEMPTS):
        existing = await _by_hash(repos, agent.agent_id, content_hash)
        if existing is not None and existing.state not in ("failed", "deleting"):
            return Uploaded(existing, created=False)
        if existing is not None:  # failed, or going: replaced (another upload may be first)
            with contextlib.suppress(DocumentNotFound):
                await delete(repos, processor.search, agent, existing.document_id)
        now = _now(processor)
        document = Document(
            agent_id=agent.agent_id,
            document_id=new_id(),
            file_name=name,
            media_type=read.media_type,
            content_hash=content_hash,
            size_bytes=len(data),
            pages=read.pages,
            run_id=f"docrun_{new_id()[:20]}",
            created_at=now,
            updated_at=now,
        )
        # The passages first: the document that names them is written once they are there.
        await repos.documents.put_texts(
            _shares(agent.agent_id, document.document_id, read.passages)
        )
        guard = DocumentHashGuard(
            agent_id=agent.agent_id, content_hash=content_hash, document_id=document.document_id
        )
        try:
            await repos.documents.create(
                document, guard, [documents_op(agent.created_by, agent.agent_id, 1)]
            )
        except TransactionCancelled as e:
            await repos.documents.delete_texts(agent.agent_id, document.document_id)
            if e.refused(HASH_GUARD):
                continue  # the same file, uploaded at the same moment: that document
            if e.refused("agent"):
                raise AgentNotFound("Agent not found.") from e
            raise
        await processor.enqueue(document)
        return Uploaded(document, created=True)
    raise DocumentBusy("This file's document was being replaced by other uploads; try again.")


async def _by_hash(repos: Repositories, agent_id: str, content_hash: str) -> Document | None:
    guard = await repos.documents.guard_of(agent_id, content_hash)
    if guard is None:
        return None
    return await repos.documents.get(agent_id, guard.document_id)


async def list_documents(repos: Repositories, agent_id: str) -> list[Document]:
    """The agent's documents, newest first, then by name (a document being deleted is gone
    already)."""
    found = [d for d in await repos.documents.list_for(agent_id) if d.state != "deleting"]
    by_name = sorted(found, key=lambda d: (d.file_name, d.document_id))
    return sorted(by_name, key=lambda d: d.created_at, reverse=True)


async def get(
    repos: Repositories, processor: DocumentProcessor, agent_id: str, document_id: str
) -> Document:
    """The document, or 404. One still processing long after its last attempt began (its
    process stopped) is sent to the queue again."""
    document = await repos.documents.get(agent_id, document_id)
    if document is None or document.state == "deleting":
        raise DocumentNotFound("No document with this id.")
    await processor.revive(document)
    return document


async def delete(repos: Repositories, search: SearchEngine, agent: Agent, document_id: str) -> None:
    """The document and its passages: marked as being deleted first (from then on no
    passage of it is written), its passages removed through the change log (from then on
    no replica finds them), then the rest."""
    found = await repos.documents.get(agent.agent_id, document_id)
    if found is None:
        raise DocumentNotFound("No document with this id.")
    marked = await repos.documents.set_state(
        found, "deleting", expected=None, fields={"updated_at": _iso(search)}
    )
    if marked is None:
        raise DocumentNotFound("No document with this id.")
    await remove_passages(
        search, await repos.documents.passage_keys(agent.agent_id, document_id), agent.agent_id
    )
    await repos.documents.delete_texts(agent.agent_id, document_id)
    try:
        await repos.documents.delete(marked, [documents_op(agent.created_by, agent.agent_id, -1)])
    except TransactionCancelled as e:
        if not e.refused(DOCUMENT):  # the agent went meanwhile: its partition goes with it
            if e.refused("agent"):
                return
            raise


def _iso(search: SearchEngine) -> str:
    return datetime.fromtimestamp(search.clock.now(), UTC).isoformat()


async def search(
    engine: SearchEngine,
    agent_id: str,
    query: str,
    *,
    limit: int = 5,
    mode: Mode | None = None,
) -> PassageSearch:
    """The passages of the agent's documents that best match `query`, best first."""
    text = " ".join(query.split())
    if not text:
        raise EmptyQuery("The query is empty; give words to search the documents for.")
    found = await engine.search(
        agent_id, text, mode=mode, filters=Filters(kinds=frozenset({"passage"})), limit=limit
    )
    hits = [
        PassageHit(origin=h.doc.origin, text=h.doc.text, score=h.score, similarity=h.similarity)
        for h in found.hits
        if h.doc.origin is not None
    ]
    return PassageSearch(query=text, total=found.total, mode=found.mode, hits=hits)
