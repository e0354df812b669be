"""Uploads processed in the background, through the queue port: each document's passages
embedded and written into the agent's search index (through the change log, a batch at a
time), then the document marked ready, or failed after its attempts.

The table is the queue: a document is durable from its upload (its item in state
`processing`, its passages in `DocumentText` items); the queue only wakes a worker. A
document whose process stopped is sent again when it is next read (`revive`)."""

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

from api.config import Settings
from api.documents import repository
from api.documents.models import Document, Passage
from api.errors import AppError, public_body
from api.kit.clock import Clock
from api.queue.base import Delivery, RunQueue
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.search.repository import MAX_CHANGE_KEYS
from api.store.table import TransactionCancelled

log = logging.getLogger(__name__)

BATCH = 32  # passages embedded and written at a time
BATCH_BYTES = 1_500_000  # ...and at most this much text (DynamoDB: 4 MB a transaction)
RETRY_SECONDS = 2.0  # after a failed attempt, times the attempts
STALE_SECONDS = 120.0  # a document processing this long since its attempt began: sent again


@dataclass
class DocumentProcessor:
    """One per process: sends uploads to the queue and works them with `workers` tasks."""

    repos: Repositories
    search: SearchEngine
    clock: Clock
    settings: Settings
    queue: RunQueue
    _tasks: list["asyncio.Task[None]"] = field(default_factory=list)
    _working: set[str] = field(default_factory=set)  # documents this process works now

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._work()) for _ in range(self.settings.document_workers)
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.queue.aclose()

    async def enqueue(self, document: Document) -> None:
        """Sent to a worker. A failure here loses nothing: the document is in the table,
        and its next read sends it again once it is stale."""
        try:
            await self.queue.send(document.agent_id, document.document_id)
        except Exception:
            log.warning("sending document %s failed", document.document_id)

    async def revive(self, document: Document) -> None:
        """A document still processing long after its attempt began, by no worker of
        this process: its process stopped, so it is sent again."""
        if (
            document.state != "processing"
            or document.imported  # its import writes it, or a new import finishes it
            or document.document_id in self._working
        ):
            return
        if self.clock.now() - document.updated_at.timestamp() > STALE_SECONDS:
            await self.enqueue(document)

    async def _work(self) -> None:
        while True:
            try:
                deliveries = await self.queue.receive(wait_seconds=10.0)
            except Exception:
                log.warning("receiving documents failed", exc_info=True)
                await asyncio.sleep(1.0)
                continue
            for delivery in deliveries:
                try:
                    await self.handle(delivery)
                except Exception:
                    log.exception("document %s could not be processed", delivery.run_id)
                    with contextlib.suppress(Exception):
                        await self.queue.retry(delivery, RETRY_SECONDS)

    async def handle(self, delivery: Delivery) -> None:
        """One delivery: its document processed, failed, or handed back for later."""
        agent_id, document_id = delivery.group, delivery.run_id
        document = await self.repos.documents.get(agent_id, document_id)
        if (
            document is None
            or document.state != "processing"
            or document.imported
            or document_id in self._working
        ):
            await self.queue.ack(delivery)
            return
        self._working.add(document_id)
        try:
            started = await self.repos.documents.set_state(
                document,
                "processing",
                expected="processing",
                fields={"attempts": document.attempts + 1, "updated_at": self._now()},
            )
            if started is None:
                await self.queue.ack(delivery)
                return
            try:
                count = await self.process(started)
            except TransactionCancelled as e:
                if e.refused(repository.DOCUMENT):  # deleted meanwhile: nothing to do
                    await self.queue.ack(delivery)
                    return
                raise
            except Exception as e:
                failure = e if isinstance(e, AppError) else AppError("unexpected failure")
                log.warning("processing document %s failed: %s", document_id, e)
                error = f"{failure.code}: {public_body(failure)['message']}"
                if started.attempts >= self.settings.document_attempts:
                    await self._fail(started, error)
                    await self.queue.ack(delivery)
                else:
                    await self.repos.documents.set_state(
                        started, "processing", expected="processing", fields={"error": error}
                    )
                    await self.queue.retry(delivery, RETRY_SECONDS * started.attempts)
                return
            ready = await self.repos.documents.set_state(
                started,
                "ready",
                expected="processing",
                fields={"passages": count, "updated_at": self._now()},
                remove=["error"],
            )
            if ready is not None:
                await self.repos.documents.delete_texts(agent_id, document_id)
            await self.queue.ack(delivery)
        finally:
            self._working.discard(document_id)

    async def process(self, document: Document) -> int:
        """Every passage of the document embedded and indexed; how many. Passages have
        fixed keys (the document and their number), so an attempt after a failed one
        writes the same items again."""
        texts = await self.repos.documents.texts(document.agent_id, document.document_id)
        passages = [
            Passage.of(document, number, text.content, text.page, text.heading)
            for number, text in enumerate(p for share in texts for p in share.passages)
        ]
        if not passages:
            raise AppError("The document's passages are gone.")
        for batch in _batches(passages):
            vectors = await self.search.vectors([p.content for p in batch], background=True)
            items = [
                p.item_with(v, self.search.model_id) for p, v in zip(batch, vectors, strict=True)
            ]
            await repository.write_passages(self.search, document, items)
        return len(passages)

    async def _fail(self, document: Document, error: str) -> None:
        """Failed: what it wrote of its passages removed, so a failed document is never found."""
        failed = await self.repos.documents.set_state(
            document,
            "failed",
            expected="processing",
            fields={"error": error, "updated_at": self._now()},
        )
        if failed is None:
            return
        found = await self.repos.documents.passage_keys(document.agent_id, document.document_id)
        await repository.remove_passages(self.search, found, document.agent_id)
        await self.repos.documents.delete_texts(document.agent_id, document.document_id)

    def _now(self) -> str:
        return datetime.fromtimestamp(self.clock.now(), UTC).isoformat()


def _batches(passages: list[Passage]) -> list[list[Passage]]:
    size = min(BATCH, MAX_CHANGE_KEYS - 1)  # and the document's check
    batches: list[list[Passage]] = []
    batch: list[Passage] = []
    weight = 0
    for passage in passages:
        cost = 2 * len(passage.content.encode()) + 2000  # its text, its vector, its keys
        if batch and (len(batch) == size or weight + cost > BATCH_BYTES):
            batches.append(batch)
            batch, weight = [], 0
        batch.append(passage)
        weight += cost
    if batch:
        batches.append(batch)
    return batches
