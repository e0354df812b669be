"""Documents in the table, under their agent's partition: the document, its hash guard, the
passages waiting to be indexed, and the searchable passages (written and deleted through
the search engine's change log, like archival memories, so that every replica's index
keeps in step)."""

from collections.abc import Sequence
from datetime import UTC, datetime

from api.documents.models import Document, DocumentHashGuard, DocumentState, DocumentText
from api.search.engine import SearchEngine
from api.store import keys
from api.store.pages import query_all
from api.store.table import (
    SK,
    AttrEquals,
    ConditionFailed,
    Delete,
    Item,
    ItemAbsent,
    ItemExists,
    Key,
    Put,
    Table,
    TxOp,
    Update,
)

# The labels of a document's writes in a transaction, for reading which one was refused.
DOCUMENT = "document"
HASH_GUARD = "document_hash_guard"


def still_processing(document: Document, at: datetime) -> Update:
    """Joins every write of the document's passages: none lands once the document is being
    deleted (or is gone), so a deleted document leaves no passage behind on any replica.
    Each also says, by `updated_at`, that its processing goes on: no other process takes a
    long document for one whose process stopped (`DocumentProcessor.revive`)."""
    return Update(
        document.key(),
        set={"updated_at": at.isoformat()},
        condition=AttrEquals("state", "processing"),
        label=DOCUMENT,
    )


class DocumentRepository:
    """An agent's documents, found by the agent and the document's id or its content hash."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def get(self, agent_id: str, document_id: str) -> Document | None:
        item = await self.table.get(keys.document(agent_id, document_id))
        return Document.from_dynamo_item(item) if item else None

    async def list_for(self, agent_id: str) -> list[Document]:
        pk, sk = keys.documents_of(agent_id)
        return [Document.from_dynamo_item(i) for i in await query_all(self.table, pk, sk=sk)]

    async def guard_of(self, agent_id: str, content_hash: str) -> DocumentHashGuard | None:
        item = await self.table.get(keys.document_hash_guard(agent_id, content_hash))
        return DocumentHashGuard.from_dynamo_item(item) if item else None

    async def put_texts(self, texts: Sequence[DocumentText]) -> None:
        await self.table.batch_write(puts=[t.to_dynamo_item() for t in texts])

    async def texts(self, agent_id: str, document_id: str) -> list[DocumentText]:
        pk, sk = keys.document_texts_of(agent_id, document_id)
        return [DocumentText.from_dynamo_item(i) for i in await query_all(self.table, pk, sk=sk)]

    async def delete_texts(self, agent_id: str, document_id: str) -> None:
        pk, sk = keys.document_texts_of(agent_id, document_id)
        found = await query_all(self.table, pk, sk=sk)
        if found:
            await self.table.batch_write(deletes=[Key(pk, i[SK]) for i in found])

    async def passage_keys(self, agent_id: str, document_id: str) -> list[Key]:
        pk, sk = keys.passages_of_document(agent_id, document_id)
        return [Key(pk, i[SK]) for i in await query_all(self.table, pk, sk=sk)]

    async def passage_items(self, agent_id: str, document_id: str) -> list[Item]:
        pk, sk = keys.passages_of_document(agent_id, document_id)
        return await query_all(self.table, pk, sk=sk)

    async def create(
        self, document: Document, guard: DocumentHashGuard, also: Sequence[TxOp] = ()
    ) -> None:
        """Both or neither, with `also` (the agent's count of documents, with its own
        label); TransactionCancelled, HASH_GUARD refused, when the agent holds the file."""
        await self.table.transact_write(
            [
                Put(guard.to_dynamo_item(), condition=ItemAbsent(), label=HASH_GUARD),
                Put(document.to_dynamo_item(), condition=ItemAbsent(), label=DOCUMENT),
                *also,
            ]
        )

    async def set_state(
        self,
        document: Document,
        state: DocumentState,
        *,
        expected: DocumentState | None,
        fields: dict[str, object] | None = None,
        remove: Sequence[str] = (),
    ) -> Document | None:
        """The document moved to `state` (from `expected`, or from any state while it
        exists); None when it was not in that state, or is gone."""
        condition = ItemExists() if expected is None else AttrEquals("state", expected)
        try:
            item = await self.table.update(
                document.key(),
                set={"state": state, **(fields or {})},
                remove=remove,
                condition=condition,
            )
        except ConditionFailed:
            return None
        return Document.from_dynamo_item(item)

    async def delete(self, document: Document, also: Sequence[TxOp] = ()) -> None:
        """The document (being deleted) and its guard, with `also` (the agent's count)."""
        await self.table.transact_write(
            [
                Delete(document.key(), condition=AttrEquals("state", "deleting"), label=DOCUMENT),
                Delete(
                    keys.document_hash_guard(document.agent_id, document.content_hash),
                    condition=AttrEquals("document_id", document.document_id),
                ),
                *also,
            ]
        )


async def write_passages(search: SearchEngine, document: Document, items: Sequence[Item]) -> None:
    """Passages of a document being processed, through the change log; TransactionCancelled,
    DOCUMENT refused, once it is being deleted or gone."""
    at = datetime.fromtimestamp(search.clock.now(), UTC)
    await search.commit(
        document.agent_id,
        [still_processing(document, at), *(Put(item) for item in items)],
        upserts=items,
    )


async def remove_passages(search: SearchEngine, keys_: Sequence[Key], agent_id: str) -> None:
    """Passages deleted through the change log: no replica finds them once this returns."""
    await search.remove(agent_id, keys_)
