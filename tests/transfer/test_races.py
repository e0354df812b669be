"""Imports that meet something else: the same file imported twice at once (two connections
to one SQLite file, as two workers would be), and a file changed on disk between the two
passes of its import."""

import asyncio
import tempfile
from pathlib import Path

import pytest

from api.embeddings.base import Embedder
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.search.repository import SearchRepository
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Item, Table
from api.transfer import service as transfer
from api.transfer.errors import InvalidImportFile
from tests.stored import all_archival
from tests.transfer.conftest import BOB, everything, export_bytes, make_agent, records, write

SEARCH_BOOKKEEPING = ("SearchVersion", "SearchChange#")  # how many changes: not memory


async def memory_of(table: Table) -> list[Item]:
    """Every item but the search engine's change log, whose length depends on how the
    writes were grouped, not on what was written."""
    return [i for i in await everything(table) if not str(i["sk"]).startswith(SEARCH_BOOKKEEPING)]


async def imported_alone(
    tmp_path: Path, static: Embedder, clock: FrozenClock, data: bytes
) -> list[Item]:
    """The same file imported once, into a store of its own: what the race must end as."""
    table = SqliteTable(tmp_path / "alone.db", "transfer-test", load_definition(), clock=clock)
    await table.create()
    search = SearchEngine(SearchRepository(table), static, clock)
    await transfer.import_file(
        Repositories.over(table), search, BOB, write(tmp_path, data, "alone.jsonl")
    )
    found = await memory_of(table)
    await search.aclose()
    await table.close()
    return found


async def test_two_imports_of_one_file_at_once_make_one_agent(
    repos_sqlite: Repositories,
    search_sqlite: SearchEngine,
    static: Embedder,
    clock: FrozenClock,
    tmp_path: Path,
) -> None:
    made = await make_agent(repos_sqlite, search_sqlite, clock)
    data = await export_bytes(repos_sqlite.table, made.agent, clock)
    path = write(tmp_path, data)
    before = await memory_of(repos_sqlite.table)
    # A second connection to the same file, with its own search engine: another worker.
    other = SqliteTable(tmp_path / "transfer.db", "transfer-test", load_definition(), clock=clock)
    other_search = SearchEngine(SearchRepository(other), static, clock)
    try:
        first, second = await asyncio.gather(
            transfer.import_file(repos_sqlite, search_sqlite, BOB, path),
            transfer.import_file(Repositories.over(other), other_search, BOB, path),
        )
    finally:
        await other_search.aclose()
        await other.close()
    (a,), (b,) = first, second
    assert a.agent_id == b.agent_id
    assert sorted([a.created, b.created]) == [False, True]  # one made it, the other found it
    assert a.agent_name == b.agent_name == "Memory: customer_42"
    # Between them, each memory and message was written once, whichever wrote it.
    written = a.written + b.written
    assert written["agent"] == 1
    assert written["archival"] == 5
    assert written["message"] == 4
    assert written["block"] == 3
    # What the second was refused is said as what it is: there already.
    reasons = {s.reason for report in (a, b) for s in report.skipped.values()}
    assert reasons <= {
        "imported before: this file's agent is already yours",
        "imported before (its messages are checked one by one)",
        "imported before",
        "the agent has a block of that name already",
        "the block has warned turns already",
        "the same text is stored already",
    }, reasons
    # And the store holds what one import alone makes.
    added = [i for i in await memory_of(repos_sqlite.table) if i not in before]
    assert added == await imported_alone(tmp_path, static, clock, data)


class RewriteBetweenPasses:
    """A progress bar that, as pass 1 ends, has the file replaced on disk (a download
    still running, an editor saving): pass 2 must not see it."""

    def __init__(self, path: Path, data: bytes) -> None:
        self.path, self.data = path, data
        self.written = 0

    def checked(self, records: int) -> None:
        self.path.write_bytes(self.data)

    def wrote(self, records: int) -> None:
        self.written += records


async def test_a_file_changed_between_the_passes_is_imported_as_it_was_checked(
    repos_sqlite: Repositories,
    search_sqlite: SearchEngine,
    clock: FrozenClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))  # where the private copy goes
    made = await make_agent(repos_sqlite, search_sqlite, clock)
    data = await export_bytes(repos_sqlite.table, made.agent, clock)
    path = write(tmp_path, data)
    # What replaces it: a planted memory (its own hash right, so that only the file's
    # digest, checked in pass 1, could tell), and a line that is not a record at all.
    changed = data.replace(b"Ada's cat is called Turing.", b"Ada's cat is called Eve!!!!")
    changed = changed.replace(b'{"type":"conversation"', b'{not a record\n{"type":"conversation"')
    assert changed != data
    progress = RewriteBetweenPasses(path, changed)
    (report,) = await transfer.import_file(repos_sqlite, search_sqlite, BOB, path, progress)
    assert path.read_bytes() == changed  # the file did change under the import
    assert report.created
    assert report.written["archival"] == 5
    assert report.written["message"] == 4
    exported = [r["content"] for r in records(data) if r["type"] == "archival"]
    stored = await all_archival(repos_sqlite.memory, report.agent_id)
    assert sorted(m.content for m in stored) == sorted(exported)
    assert progress.written == sum(1 for r in records(data) if r["type"] not in ("header", "end"))
    assert list(spool.iterdir()) == []  # the import's private copy is gone


async def test_a_file_refused_leaves_no_copy_behind(
    repos_sqlite: Repositories,
    search_sqlite: SearchEngine,
    clock: FrozenClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    made = await make_agent(repos_sqlite, search_sqlite, clock)
    data = await export_bytes(repos_sqlite.table, made.agent, clock)
    cut = b"".join(data.splitlines(keepends=True)[:-2])
    with pytest.raises(InvalidImportFile, match="cut short"):
        await transfer.import_file(repos_sqlite, search_sqlite, BOB, write(tmp_path, cut))
    assert list(spool.iterdir()) == []
