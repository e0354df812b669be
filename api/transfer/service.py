"""Export and import of one agent: the use cases the CLI and the routes share.

An import reads its file twice: pass 1 checks all of it on a worker thread (framing,
digest, every record), and only then pass 2 writes, a batch of records at a time, through
the repositories (`writer`). A file that fails pass 1 leaves the store as it was.
"""

import asyncio
import hashlib
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Protocol

from api.agents.models import Agent
from api.kit.clock import Clock
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.transfer import exporter, letta, reader
from api.transfer.checker import Checker, refuse
from api.transfer.errors import ImportTooLarge
from api.transfer.writer import ImportReport, Writer

READ_BATCH = 1000  # records parsed per hop to a worker thread in pass 2
SPOOL_CHUNK = 1024 * 1024  # request bytes gathered before one write to the spool file


class Progress(Protocol):
    """Told how many records there are once the file is checked, then as they are written."""

    def checked(self, records: int) -> None: ...

    def wrote(self, records: int) -> None: ...


class NoProgress:
    def checked(self, records: int) -> None:
        pass

    def wrote(self, records: int) -> None:
        pass


def export_agent(
    repos: Repositories, agent: Agent, clock: Clock, *, with_vectors: bool = True
) -> AsyncIterator[bytes]:
    return exporter.export_agent(repos, agent, clock, with_vectors=with_vectors)


async def import_file(
    repos: Repositories,
    search: SearchEngine,
    email: str,
    path: Path,
    progress: Progress | None = None,
    *,
    private: bool = False,
) -> list[ImportReport]:
    """Everything of the file into `email`'s tenant: our export file, or a Letta agent file
    (one report per agent it holds). InvalidImportFile, with nothing written, when any of
    it cannot be imported.

    An export file is read twice. Unless it is `private` (a spooled request body nobody
    else writes), pass 1 copies it to a temporary file of ours as it checks it and pass 2
    reads that copy: a file changed on disk between the passes (a download still running,
    an editor) cannot bring unchecked records into pass 2."""
    progress = progress or NoProgress()
    if not await asyncio.to_thread(reader.is_export_file, path):
        return await _import_letta(repos, search, email, path, progress)
    if private:
        plan = await asyncio.to_thread(reader.check_file, path)
        progress.checked(plan.records)
        return [await _write_export(repos, search, email, path, plan, progress)]
    handle = await asyncio.to_thread(_spool_file)
    copy = Path(handle.name)
    try:
        try:
            plan = await asyncio.to_thread(reader.check_file, path, copy=handle)
        finally:
            await asyncio.to_thread(handle.close)
        progress.checked(plan.records)
        return [await _write_export(repos, search, email, copy, plan, progress)]
    finally:
        await asyncio.to_thread(copy.unlink, missing_ok=True)


async def _write_export(
    repos: Repositories,
    search: SearchEngine,
    email: str,
    path: Path,
    plan: reader.Plan,
    progress: Progress,
) -> ImportReport:
    writer = Writer(repos, search, email, plan.header.source_agent_id)
    records = reader.RecordFile(path)
    # The next batch is read and parsed on a thread while this one is written.
    reading = asyncio.ensure_future(asyncio.to_thread(records.next_batch, READ_BATCH))
    try:
        while batch := await reading:
            reading = asyncio.ensure_future(asyncio.to_thread(records.next_batch, READ_BATCH))
            for record in batch:
                await writer.add(record)
            progress.wrote(len(batch))
    finally:
        await asyncio.wait([reading])  # the file is closed only once no thread reads it
        if not reading.cancelled():
            reading.exception()  # seen: a failed read ahead is not reported as lost
        records.close()
    return await writer.finish()


def _checked_letta(path: Path) -> list[letta.Converted]:
    """Pass 1 for a Letta file (a worker thread's work): read whole, converted, and every
    agent's records checked before any is written."""
    if path.stat().st_size > letta.MAX_FILE_BYTES:
        raise refuse(None, f"A Letta agent file is read whole: at most {letta.MAX_FILE_BYTES} B.")
    data = path.read_bytes()
    converted = letta.convert(letta.parse(data), hashlib.sha256(data).hexdigest())
    for agent in converted:
        checker = Checker()
        for record in agent.records:
            checker.check(record, None)
        checker.finish()
    return converted


async def _import_letta(
    repos: Repositories, search: SearchEngine, email: str, path: Path, progress: Progress
) -> list[ImportReport]:
    converted = await asyncio.to_thread(_checked_letta, path)
    progress.checked(sum(len(agent.records) for agent in converted))
    reports: list[ImportReport] = []
    for agent in converted:
        writer = Writer(repos, search, email, agent.source_agent_id)
        for record in agent.records:
            await writer.add(record)
            progress.wrote(1)
        report = await writer.finish()
        for kind, reason, count in agent.left_out:
            report.skip(kind, reason, count=count)
        reports.append(report)
    return reports


async def spool(chunks: AsyncIterator[bytes], limit: int) -> Path:
    """A request body in a temporary file (the import reads it twice), at most `limit`
    bytes: ImportTooLarge past it. The caller deletes the file."""
    handle = await asyncio.to_thread(_spool_file)
    path = Path(handle.name)
    size = 0
    pending: list[bytes] = []
    pending_size = 0
    try:
        async for chunk in chunks:
            size += len(chunk)
            if size > limit:
                raise ImportTooLarge(
                    f"The file is larger than this server imports ({limit} bytes at most; "
                    "MAX_IMPORT_BYTES)."
                )
            pending.append(chunk)
            pending_size += len(chunk)
            if pending_size >= SPOOL_CHUNK:
                await asyncio.to_thread(handle.write, b"".join(pending))
                pending, pending_size = [], 0
        if pending:
            await asyncio.to_thread(handle.write, b"".join(pending))
    except BaseException:
        await asyncio.to_thread(_discard, handle, path)
        raise
    await asyncio.to_thread(handle.close)
    return path


def _spool_file() -> IO[bytes]:
    return tempfile.NamedTemporaryFile(
        mode="wb", prefix="agent-import-", suffix=".jsonl", delete=False
    )


def _discard(handle: IO[bytes], path: Path) -> None:
    handle.close()
    path.unlink(missing_ok=True)


async def import_body(
    repos: Repositories,
    search: SearchEngine,
    email: str,
    chunks: AsyncIterator[bytes],
    *,
    limit: int,
) -> list[ImportReport]:
    path = await spool(chunks, limit)
    try:
        return await import_file(repos, search, email, path, private=True)
    finally:
        await asyncio.to_thread(path.unlink, missing_ok=True)
