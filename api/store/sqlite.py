"""The embedded engine: the one table in one SQLite file, with DynamoDB's semantics.

Each item is stored as the JSON text of its DynamoDB wire format, beside its key columns
(and index key columns) so that SQLite orders and filters them. SQLite's BINARY collation
compares UTF-8 bytes, which is DynamoDB's sort-key order.

Every operation runs as one function on the connection's own thread, and a conditional
write is a single BEGIN IMMEDIATE transaction, so concurrent requests (and other processes,
through WAL and the busy timeout) never interleave inside one. Writes queued while the
thread was busy commit together (group commit): one transaction for all of them, each
write in its own SAVEPOINT so that one write's failed condition fails that write alone,
and none answered before the COMMIT that makes it durable.
"""

import asyncio
import contextlib
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from api.kit.clock import Clock, SystemClock
from api.kit.private_files import private_file
from api.store import codec, rules
from api.store.conditions import apply_update, holds, live
from api.store.definition import IndexDefinition, TableDefinition
from api.store.keys import ENTITY
from api.store.table import (
    CONDITION_FAILED,
    PK,
    SK,
    TTL,
    Check,
    Condition,
    ConditionFailed,
    Delete,
    InvalidItem,
    Item,
    Key,
    Page,
    Put,
    SkCondition,
    StoreError,
    Throttled,
    TransactionCancelled,
    TxOp,
    Update,
)

T = TypeVar("T")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
_MAX_CHAR = "\U0010ffff"


class _Job(NamedTuple):
    call: Callable[[], Any]
    future: "asyncio.Future[Any]"
    write: bool  # may commit together with other writes


def _outcome(call: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        return call(), None
    except BaseException as e:  # handed to the caller, whatever it is
        return None, e


def _answer(jobs: Sequence[_Job], outcomes: Sequence[tuple[Any, BaseException | None]]) -> None:
    """Hands each job its outcome on its own event loop: one callback per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any, Any]]] = {}
    for job, (value, error) in zip(jobs, outcomes, strict=True):
        by_loop.setdefault(job.future.get_loop(), []).append((job.future, value, error))
    for loop, results in by_loop.items():
        # A closed loop has nobody waiting for these calls any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, results)


def _settle(results: list[tuple["asyncio.Future[Any]", Any, Any]]) -> None:
    for future, value, error in results:
        if future.done():  # cancelled by its caller meanwhile
            continue
        try:
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)
        except TypeError:  # StopIteration cannot travel through a future
            future.set_exception(RuntimeError(repr(error)))


class SqliteTable:
    engine = "sqlite"

    def __init__(
        self,
        path: Path | str,
        name: str,
        definition: TableDefinition,
        *,
        clock: Clock | None = None,
        busy_timeout_ms: int = 5000,
    ) -> None:
        if not _NAME.match(name):
            raise ValueError(f"invalid table name {name!r}")
        self._path = str(path)
        self._name = name
        self._definition = definition
        self._clock = clock or SystemClock()
        self._busy_timeout_ms = busy_timeout_ms
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-store")
        # Calls made in one pass of an event loop, per loop; then the calls sent to the
        # thread, which takes all that wait each time it is free.
        self._pending: dict[asyncio.AbstractEventLoop, list[_Job]] = {}
        self._queue: list[_Job] = []
        self._draining = False  # the thread has the queue in hand, or is about to
        self._pending_lock = threading.Lock()  # event loops in other threads share tables
        self._commits = 0
        self._grouped = 0
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._index_columns = [c for i in definition.indexes for c in (i.pk, i.sk)]
        cols = ", ".join(["pk", "sk", "ttl", *self._index_columns, "item"])
        marks = ", ".join("?" * (4 + len(self._index_columns)))
        self._insert = f"INSERT OR REPLACE INTO {self._table} ({cols}) VALUES ({marks})"

    @property
    def name(self) -> str:
        return self._name

    @property
    def path(self) -> str:
        return self._path

    # --- plumbing --------------------------------------------------------------------

    @property
    def group_commits(self) -> tuple[int, int]:
        """Transactions that committed several writes together, and the writes in them."""
        return self._commits, self._grouped

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn` on the connection's thread. Calls made in the same pass of an event
        loop (the branches of an asyncio.gather) go to the thread together: one hop for
        all of them. Each call is answered as soon as it ends; a write that committed
        together with others, once they committed."""
        return await self._queued(fn, args, write=False)

    async def _run_write(self, fn: Callable[..., T], *args: Any) -> T:
        """`_run` for a write that may commit together with other writes: `fn` writes
        through `_write`, or makes a single statement."""
        return await self._queued(fn, args, write=True)

    async def _queued(self, fn: Callable[..., T], args: tuple[Any, ...], *, write: bool) -> T:
        if self._closed:
            raise StoreError("The store is closed.")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._pending_lock:
            pending = self._pending.setdefault(loop, [])
            pending.append(_Job(partial(self._call, fn, *args), future, write))
            first = len(pending) == 1
        if first:
            loop.call_soon(self._send_pending, loop)
        return await future

    def _send_pending(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._pending_lock:
            self._queue += self._pending.pop(loop, [])
            start, self._draining = not self._draining, True
        if not start:
            return  # the thread takes them when it is done with what it has
        try:
            self._executor.submit(self._drain)
        except RuntimeError:  # the executor is shut down: the table was closed
            with self._pending_lock:
                jobs, self._queue, self._draining = self._queue, [], False
            _answer(jobs, [(None, StoreError("The store is closed."))] * len(jobs))

    def _drain(self) -> None:
        """On the connection's thread: runs what waits, until nothing does. What is queued
        while it works waits for the next round, and its writes commit together."""
        while True:
            with self._pending_lock:
                jobs, self._queue = self._queue, []
                if not jobs:
                    self._draining = False
                    return
            jobs = [job for job in jobs if not job.future.cancelled()]  # callers gone
            writes = [job for job in jobs if job.write]
            # Calls queued together were made concurrently, so any order among them is
            # one they could have run in: reads first, answered at once, not after the
            # writes' commit. Writes keep the order they were made in.
            for job in jobs:
                if not job.write:
                    _answer([job], [_outcome(job.call)])
            if len(writes) > 1 and not self._closed:
                self._commit_together(writes)
            else:
                for job in writes:
                    _answer([job], [_outcome(job.call)])

    def _commit_together(self, writes: list[_Job]) -> None:
        try:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            _answer(writes, [(None, self._failure(e))] * len(writes))
            return
        outcomes: list[tuple[Any, BaseException | None]] = []
        for n, job in enumerate(writes):
            outcomes.append(_outcome(job.call))
            if not conn.in_transaction:
                # SQLite rolled the whole transaction back on an error of its own (a full
                # disk, I/O): the writes before went with it. Those after run alone.
                lost = StoreError("SQLite rolled the write back; it was not stored.")
                _answer(writes[: n + 1], [(None, error or lost) for _, error in outcomes])
                for job in writes[n + 1 :]:
                    _answer([job], [_outcome(job.call)])
                return
        try:
            self._commit(conn)
        except sqlite3.Error as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            failure = self._failure(e)
            outcomes = [(None, error or failure) for _, error in outcomes]
        else:
            self._commits += 1
            self._grouped += len(writes)
        _answer(writes, outcomes)

    @staticmethod
    def _commit(conn: sqlite3.Connection) -> None:
        conn.execute("COMMIT")

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:  # close() was called while this call waited for the thread
            raise StoreError("The store is closed.")
        try:
            return fn(self._connection(), *args)
        except sqlite3.Error as e:
            raise self._failure(e) from e

    def _failure(self, e: sqlite3.Error) -> StoreError:
        if isinstance(e, sqlite3.OperationalError):
            if "locked" in str(e) or "busy" in str(e):
                return Throttled("The database is busy; try again.", engine=self.engine)
            return StoreError(f"SQLite failed: {e}")
        return StoreError(f"SQLite failed on {self._path}: {e}")

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            if self._path != ":memory:":
                # SQLite gives its -wal and -shm files the database file's permissions.
                private_file(Path(self._path))
            conn = sqlite3.connect(
                self._path, isolation_level=None, check_same_thread=False, timeout=0
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._conn = conn
        return self._conn

    def _write(self, conn: sqlite3.Connection, fn: Callable[[], T]) -> T:
        """`fn` all or nothing: its own transaction, or, committing together with other
        writes, its own savepoint in theirs."""
        if conn.in_transaction:
            conn.execute("SAVEPOINT write")
            try:
                result = fn()
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled the whole one back
                    conn.execute("ROLLBACK TO write")
                    conn.execute("RELEASE write")
                raise
            conn.execute("RELEASE write")
            return result
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back on its own already
                conn.execute("ROLLBACK")
            raise
        return result

    @property
    def _table(self) -> str:
        return f'"{self._name}"'

    # --- lifecycle -------------------------------------------------------------------

    async def create(self) -> None:
        await self._run(self._create)

    def _create(self, conn: sqlite3.Connection) -> None:
        index_cols = "".join(f", {c} TEXT" for c in self._index_columns)
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {self._table} (pk TEXT NOT NULL, sk TEXT NOT NULL,"
            f" ttl REAL{index_cols}, item TEXT NOT NULL, PRIMARY KEY (pk, sk)) WITHOUT ROWID"
        )
        for index in self._definition.indexes:
            conn.execute(
                f'CREATE INDEX IF NOT EXISTS "{self._name}.{index.name}" ON {self._table}'
                f" ({index.pk}, {index.sk}, pk, sk)"
                f" WHERE {index.pk} IS NOT NULL AND {index.sk} IS NOT NULL"
            )

    async def ping(self) -> None:
        await self._run(lambda conn: conn.execute(f"SELECT 1 FROM {self._table} LIMIT 1"))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def _close() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        # Runs after every call already queued on the connection's thread.
        await asyncio.get_running_loop().run_in_executor(self._executor, _close)
        await asyncio.to_thread(self._executor.shutdown)

    async def sweep_expired(self) -> int:
        """Delete expired items, as DynamoDB's TTL sweeper does; reads never see them anyway."""

        def _sweep(conn: sqlite3.Connection) -> int:
            cur = conn.execute(f"DELETE FROM {self._table} WHERE ttl <= ?", (self._clock.now(),))
            return cur.rowcount

        return await self._run_write(_sweep)

    # --- rows ------------------------------------------------------------------------

    def _load(self, conn: sqlite3.Connection, key: Key) -> Item | None:
        """The live item with this key; an expired one that is still stored counts as none."""
        row = conn.execute(
            f"SELECT item FROM {self._table} WHERE pk = ? AND sk = ?", (key.pk, key.sk)
        ).fetchone()
        return live(codec.from_wire(codec.loads(row[0])), self._clock.now()) if row else None

    @staticmethod
    def _encode(item: Mapping[str, Any]) -> tuple[dict[str, codec.Wire], str]:
        """`item`'s wire form (`codec.from_wire` of it is what is stored) and the text
        stored, or InvalidItem / ItemTooLarge. Made before any condition is evaluated:
        DynamoDB refuses an item it cannot store whatever the condition would say."""
        wire = codec.to_wire(item)
        return wire, codec.dumps_checked(wire)

    def _store(self, conn: sqlite3.Connection, wire: Mapping[str, codec.Wire], text: str) -> None:
        """Writes an item `_encode` made. The columns come from the wire form's top level:
        no second walk of the item."""
        ttl = wire.get(TTL, {}).get("N")  # a number's text: float() reads it as from_wire's
        index_values = [
            (wire.get(c) or {}).get("S")
            for c in self._index_columns  # text values only
        ]
        conn.execute(
            self._insert,
            (
                wire[PK]["S"],
                wire[SK]["S"],
                None if ttl is None else float(ttl),
                *index_values,
                text,
            ),
        )

    def _delete_row(self, conn: sqlite3.Connection, key: Key) -> None:
        conn.execute(f"DELETE FROM {self._table} WHERE pk = ? AND sk = ?", (key.pk, key.sk))

    def _check(self, condition: Condition | None, current: Item | None) -> None:
        if condition is not None and not holds(condition, current, self._clock.now()):
            raise ConditionFailed("The item is not in the state the write expected.")

    # --- single items ----------------------------------------------------------------

    async def get(self, key: Key) -> Item | None:
        rules.check_key(key)

        return await self._run(self._load, key)

    async def put(self, item: Item, *, condition: Condition | None = None) -> None:
        key = rules.check_item(self._definition, item)

        def _put(conn: sqlite3.Connection) -> None:
            encoded = self._encode(item)
            if condition is None:
                self._store(conn, *encoded)
                return

            def tx() -> None:
                self._check(condition, self._load(conn, key))
                self._store(conn, *encoded)

            self._write(conn, tx)

        await self._run_write(_put)

    async def update(
        self,
        key: Key,
        *,
        set: Mapping[str, Any] | None = None,
        set_if_absent: Mapping[str, Any] | None = None,
        add: Mapping[str, Any] | None = None,
        remove: Sequence[str] = (),
        condition: Condition | None = None,
    ) -> Item:
        update = Update(key, set or {}, set_if_absent or {}, add or {}, tuple(remove), condition)
        rules.check_update(self._definition, update)

        def _update(conn: sqlite3.Connection) -> Item:
            def tx() -> Item:
                current = self._load(conn, key)
                self._check(condition, current)
                wire, text = self._encode(apply_update(update, current))
                self._store(conn, wire, text)
                return codec.from_wire(wire)

            return self._write(conn, tx)

        return await self._run_write(_update)

    async def delete(self, key: Key, *, condition: Condition | None = None) -> None:
        rules.check_key(key)

        def _delete(conn: sqlite3.Connection) -> None:
            def tx() -> None:
                if condition is not None:
                    self._check(condition, self._load(conn, key))
                self._delete_row(conn, key)

            self._write(conn, tx)

        await self._run_write(_delete)

    # --- queries ---------------------------------------------------------------------

    async def query(
        self,
        pk: str,
        *,
        sk: SkCondition | None = None,
        index: str | None = None,
        forward: bool = True,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page:
        idx = rules.check_query(self._definition, pk, sk, index, limit)
        shape = rules.query_shape(idx, sk, forward)
        position = rules.decode_cursor(cursor, pk, idx, shape) if cursor is not None else None
        sql, params = self._query_sql(pk, sk, idx, forward, limit, position)

        def _query(conn: sqlite3.Connection) -> Page:
            rows = conn.execute(sql, params).fetchall()
            items = [codec.from_wire(codec.loads(r[0])) for r in rows]
            if limit is not None and len(items) > limit:
                items = items[:limit]
                return Page(items, rules.encode_cursor(items[-1], idx, shape))
            return Page(items, None)

        return await self._run(_query)

    async def scan(
        self, *, entity: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Page:
        rules.check_scan(entity, limit)
        shape = rules.scan_shape(entity)
        position = rules.decode_scan_cursor(cursor, shape) if cursor is not None else None
        # Keyset pages in key order. As DynamoDB's Limit does, `limit` counts the rows read
        # before the entity filter, so a page may come back short, or empty, mid-scan
        # (expired rows are left out by the SELECT itself, so they do not count here).
        where = ["(ttl IS NULL OR ttl > ?)"]
        params: list[Any] = [self._clock.now()]
        if position is not None:
            where.append("(pk, sk) > (?, ?)")
            params += [position[PK], position[SK]]
        sql = f"SELECT pk, sk, item FROM {self._table} WHERE {' AND '.join(where)} ORDER BY pk, sk"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit + 1)  # one row ahead: a cursor only when rows follow
        wanted = None if entity is None else {"S": entity}

        def _scan(conn: sqlite3.Connection) -> Page:
            rows = conn.execute(sql, params).fetchall()
            next_cursor = None
            if limit is not None and len(rows) > limit:
                rows = rows[:limit]
                next_cursor = rules.encode_cursor({PK: rows[-1][0], SK: rows[-1][1]}, None, shape)
            wires = (codec.loads(row[2]) for row in rows)
            items = [codec.from_wire(w) for w in wires if wanted is None or w.get(ENTITY) == wanted]
            return Page(items, next_cursor)

        return await self._run(_scan)

    def _query_sql(
        self,
        pk: str,
        sk: SkCondition | None,
        index: IndexDefinition | None,
        forward: bool,
        limit: int | None,
        position: dict[str, str] | None,
    ) -> tuple[str, list[Any]]:
        pk_col, sk_col = (PK, SK) if index is None else (index.pk, index.sk)
        order = rules.cursor_names(index)[1:]
        where = [f"{pk_col} = ?", "(ttl IS NULL OR ttl > ?)"]
        params: list[Any] = [pk, self._clock.now()]
        if index is not None:
            where.append(f"{sk_col} IS NOT NULL")
        resume = None if position is None else (position[sk_col], forward)
        if sk is not None or resume is not None:
            clause, values = _sk_clause(sk_col, sk, resume)
            where.append(clause)
            params += values
        if position is not None:
            cols = ", ".join(order)
            where.append(f"({cols}) {'>' if forward else '<'} ({', '.join('?' * len(order))})")
            params += [position[c] for c in order]
        direction = "ASC" if forward else "DESC"
        sql = (
            f"SELECT item FROM {self._table} WHERE {' AND '.join(where)}"
            f" ORDER BY {', '.join(f'{c} {direction}' for c in order)}"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit + 1)
        return sql, params

    # --- batches and transactions --------------------------------------------------------

    async def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        wanted = rules.unique_keys(keys)
        for key in wanted:
            rules.check_key(key)

        def _batch_get(conn: sqlite3.Connection) -> list[Item]:
            found = [self._load(conn, key) for key in wanted]
            return [item for item in found if item is not None]

        return await self._run(_batch_get)

    async def batch_write(self, *, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        keys = [rules.check_item(self._definition, item) for item in puts]
        writes = rules.last_write_wins(puts, deletes)

        def _batch_write(conn: sqlite3.Connection) -> None:
            # Every put, a replaced one too: a bad item is refused whatever follows it.
            encoded = {key: self._encode(item) for key, item in zip(keys, puts, strict=True)}

            def tx() -> None:
                for write in writes:
                    if isinstance(write, Key):
                        self._delete_row(conn, write)
                    else:
                        self._store(conn, *encoded[rules.item_key(write)])

            self._write(conn, tx)

        await self._run_write(_batch_write)

    async def transact_write(self, ops: Sequence[TxOp]) -> None:
        keys = rules.check_transaction(self._definition, ops)

        def _transact(conn: sqlite3.Connection) -> None:
            encoded = [self._encode(op.item) if isinstance(op, Put) else None for op in ops]

            def tx() -> None:
                now = self._clock.now()
                # Only a condition or an update needs the item as it is: a plain put or
                # delete is not worth a read and a decode.
                current = [
                    self._load(conn, key)
                    if op.condition is not None or isinstance(op, Update)
                    else None
                    for op, key in zip(ops, keys, strict=True)
                ]
                reasons: list[str | None] = [
                    None
                    if op.condition is None or holds(op.condition, cur, now)
                    else CONDITION_FAILED
                    for op, cur in zip(ops, current, strict=True)
                ]
                if any(reasons):
                    raise TransactionCancelled(
                        "The transaction was cancelled: a condition did not hold.",
                        reasons,
                        labels=[op.label for op in ops],
                    )
                for op, key, cur, put in zip(ops, keys, current, encoded, strict=True):
                    if put is not None:
                        self._store(conn, *put)
                    elif isinstance(op, Update):
                        self._store(conn, *self._encode(apply_update(op, cur)))
                    elif isinstance(op, Delete):
                        self._delete_row(conn, key)
                    else:
                        assert isinstance(op, Check)

            self._write(conn, tx)

        await self._run_write(_transact)

    async def put_each(self, puts: Sequence[Put]) -> list[bool]:
        keys = rules.check_put_each(self._definition, puts)

        def _put_each(conn: sqlite3.Connection) -> list[bool]:
            encoded = [self._encode(put.item) for put in puts]

            def tx() -> list[bool]:
                now = self._clock.now()
                made: list[bool] = []
                for put, key, item in zip(puts, keys, encoded, strict=True):
                    ok = put.condition is None or holds(put.condition, self._load(conn, key), now)
                    if ok:
                        self._store(conn, *item)
                    made.append(ok)
                return made

            return self._write(conn, tx)

        return await self._run_write(_put_each)


def _sk_clause(
    column: str, cond: SkCondition | None, resume: tuple[str, bool] | None = None
) -> tuple[str, list[Any]]:
    """The sort-key condition as SQL. `resume` is where a page after the first starts (the
    cursor's value of `column`, and whether the query reads forward): it becomes the bound
    on that side, in place of the condition's own. SQLite seeks on one lower (or upper)
    bound; given the condition's and the cursor's apart, it sought the condition's, so every
    page read the partition from its start (an export of 100k memories: quadratic)."""
    if cond is not None and cond.op == "eq":
        return f"{column} = ?", [cond.value]  # no range: the cursor's row comparison seeks
    lower: tuple[str, bool] | None = None  # a value, and whether it is included
    upper: tuple[str, bool] | None = None
    extra: list[tuple[str, list[Any]]] = []
    if cond is None:
        pass
    elif cond.op in ("gt", "ge"):
        lower = (cond.value, cond.op == "ge")
    elif cond.op in ("lt", "le"):
        upper = (cond.value, cond.op == "le")
    elif cond.op == "between":
        assert cond.upper is not None
        lower, upper = (cond.value, True), (cond.upper, True)
    elif cond.op == "begins_with":
        prefix = cond.value
        # A range the index can seek, plus an exact prefix test for the edge cases.
        if prefix[-1] != _MAX_CHAR:
            following = ord(prefix[-1]) + 1
            if 0xD800 <= following <= 0xDFFF:  # surrogates never occur in UTF-8 text
                following = 0xE000
            lower, upper = (prefix, True), (prefix[:-1] + chr(following), False)
        else:
            extra.append((f"substr({column}, 1, ?) = ?", [len(prefix), prefix]))
    else:
        raise InvalidItem(f"Unknown sort-key condition {cond.op!r}")
    if resume is not None:
        # Inclusive: an index's sort key repeats, the rest of the cursor tells rows apart.
        # Only ever tighter than the condition's bound, whatever a cursor says.
        value, forward = resume
        if forward and (lower is None or value > lower[0] or (value == lower[0] and lower[1])):
            lower = (value, True)
        elif not forward and (
            upper is None or value < upper[0] or (value == upper[0] and upper[1])
        ):
            upper = (value, True)
    clauses, params = [], []
    if lower is not None:
        clauses.append(f"{column} {'>=' if lower[1] else '>'} ?")
        params.append(lower[0])
    if upper is not None:
        clauses.append(f"{column} {'<=' if upper[1] else '<'} ?")
        params.append(upper[0])
    for clause, values in extra:
        clauses.append(clause)
        params += values
    return " AND ".join(clauses), params
