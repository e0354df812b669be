"""Backup and restore of the embedded store (one SQLite file), through SQLite's online
backup API: a backup is a consistent copy of the database as of one moment, taken while
the server reads and writes it (WAL: readers never wait for writers, nor writers for
it). DynamoDB keeps its own: point-in-time recovery is on in the template
(docs/operations.md says how to restore)."""

import contextlib
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from api.errors import AppError
from api.kit.private_files import private_file

_TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")


class BackupRefused(AppError):
    status_code = 400
    code = "backup_refused"


@dataclass(frozen=True)
class Copied:
    path: Path
    pages: int
    items: int


def backup(database: Path, table: str, target: Path) -> Copied:
    """A consistent copy of `database` at `target` (which must not exist yet)."""
    if not database.exists():
        raise BackupRefused(f"There is no database at {database}.")
    if target.exists():
        raise BackupRefused(f"{target} exists already; a backup never overwrites a file.")
    private_file(target)  # the copy holds what the database holds: the owner's alone
    with _open(database) as source, _open(target) as copy:
        source.backup(copy)  # all pages in one step: one moment's database
        copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
        return Copied(target, _pages(copy), _items(copy, table))


def restore(backup_file: Path, table: str, database: Path) -> Copied:
    """`database` made a copy of `backup_file`, after checking that it is a whole store of
    this table. Run it with the server stopped: a running one keeps what it read before."""
    if not backup_file.exists():
        raise BackupRefused(f"There is no backup at {backup_file}.")
    with _open(backup_file) as source:
        checked = source.execute("PRAGMA integrity_check").fetchone()
        if checked != ("ok",):
            raise BackupRefused(f"{backup_file} is damaged: {checked[0]}.")
        try:
            items = _items(source, table)
        except sqlite3.DatabaseError:
            raise BackupRefused(f"{backup_file} is not a backup of the table {table!r}.") from None
        if not database.exists():
            private_file(database)
        with _open(database) as target:
            source.backup(target)
            return Copied(database, _pages(target), items)


@contextlib.contextmanager
def _open(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        yield conn
    finally:
        conn.close()


def _pages(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA page_count").fetchone()[0])


def _items(conn: sqlite3.Connection, table: str) -> int:
    if not _TABLE_NAME.fullmatch(table):  # as DynamoDB names them: safe inside quotes
        raise BackupRefused(f"{table!r} is not a table name.")
    return int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])  # noqa: S608
