"""What a turn, a seed 004 `/memory/add`, a search and a seed 002 capture cost on DynamoDB:
the table's calls, read and write request units as DynamoDB on-demand counts them, and
the bytes they store, measured by running each through the app (in process, on SQLite)
with a table wrapper that prices every call the way DynamoDB would.

Units (DynamoDB's documentation, "Read/write capacity mode"): a strongly consistent read
(every read of ours is) takes 1 RRU per 4 KB read, at least 1; a write 1 WRU per KB of
the larger of the item before and after, at least 1; in a transaction, 2 of each; a
condition check in a transaction is priced as a write of the item checked (2 WRU per
KB). Item sizes are DynamoDB's (`codec.item_size`).

    uv run python -m bench.capacity [--n 20]
"""

import argparse
import math
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app
from api.store import codec
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Check, Delete, Item, Key, Page, Put, Table, TxOp, Update
from api.store.wrapper import TableWrapper, Target

T = TypeVar("T")
# On-demand, us-east-1, since 1 November 2024 (aws.amazon.com/dynamodb/pricing/on-demand).
PER_MILLION_WRU = 0.625
PER_MILLION_RRU = 0.125
PER_GB_MONTH = 0.25


def size(item: Item | None) -> int:
    return codec.item_size(codec.to_wire(item)) if item else 0


def read_units(nbytes: int) -> int:
    return max(1, math.ceil(nbytes / 4096))


def write_units(nbytes: int) -> int:
    return max(1, math.ceil(nbytes / 1024))


@dataclass
class Tally:
    calls: int = 0
    reads: int = 0
    writes: int = 0
    rru: int = 0
    wru: int = 0
    stored: int = 0  # bytes of items put

    def __sub__(self, other: "Tally") -> "Tally":
        return Tally(
            *(a - b for a, b in zip(vars(self).values(), vars(other).values(), strict=True))
        )


@dataclass
class Priced(TableWrapper):
    """Prices each call as DynamoDB would bill it."""

    table: Table
    tally: Tally = field(default_factory=Tally)

    def __post_init__(self) -> None:
        super().__init__(self.table)

    async def around(self, operation: str, target: Target, call: Callable[[], Awaitable[T]]) -> T:
        self.tally.calls += operation not in ("create", "ping", "close", "sweep_expired")
        return await call()

    async def get(self, key: Key) -> Item | None:
        found = await super().get(key)
        self._read(size(found))
        return found

    async def query(self, pk: str, **kw: Any) -> Page:
        page = await super().query(pk, **kw)
        self._read(sum(size(i) for i in page.items))
        return page

    async def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        found = await super().batch_get(keys)
        self.tally.reads += 1
        self.tally.rru += sum(read_units(size(i)) for i in found) + len(keys) - len(found)
        return found

    async def put(self, item: Item, **kw: Any) -> None:
        await super().put(item, **kw)
        self._write(size(item))

    async def update(self, key: Key, **kw: Any) -> Item:
        item = await super().update(key, **kw)
        self._write(size(item))
        return item

    async def delete(self, key: Key, **kw: Any) -> None:
        await super().delete(key, **kw)
        self._write(0)

    async def put_each(self, puts: Sequence[Put]) -> list[bool]:
        made = await super().put_each(puts)
        self.tally.writes += 1
        self.tally.wru += sum(write_units(size(p.item)) for p in puts)
        self.tally.stored += sum(size(p.item) for p, ok in zip(puts, made, strict=True) if ok)
        return made

    async def batch_write(self, *, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        await super().batch_write(puts=puts, deletes=deletes)
        self.tally.writes += 1
        self.tally.wru += sum(write_units(size(i)) for i in puts) + len(deletes)
        self.tally.stored += sum(size(i) for i in puts)

    async def transact_write(self, ops: Sequence[TxOp]) -> None:
        await super().transact_write(ops)
        self.tally.writes += 1
        for op in ops:
            written = size(op.item) if isinstance(op, Put) else 0
            if isinstance(op, Update | Delete | Check):
                written = size(await self.table.get(op.key)) if isinstance(op, Update) else 0
            self.tally.wru += 2 * write_units(written)
            self.tally.stored += written if isinstance(op, Put) else 0

    def _read(self, nbytes: int) -> None:
        self.tally.reads += 1
        self.tally.rru += read_units(nbytes)

    def _write(self, nbytes: int) -> None:
        self.tally.writes += 1
        self.tally.wru += write_units(nbytes)
        self.tally.stored += nbytes


def measure(n: int) -> list[tuple[str, Tally]]:
    with tempfile.TemporaryDirectory(prefix="bench-capacity-") as tmp:
        table = Priced(SqliteTable(Path(tmp) / "c.db", "capacity", load_definition()))
        settings = Settings(sqlite_path=Path(tmp) / "c.db", dynamodb_table="capacity")
        app = create_app(settings, table=table)
        rows: list[tuple[str, Tally]] = []
        with TestClient(app, base_url="http://127.0.0.1") as client:
            agent = client.post("/agents", json={"name": "Ada"}).json()["id"]
            conversation = client.post("/conversations", json={"agent_id": agent}).json()["id"]
            client.post("/memory/initialize", json={"user_id": "ada"})
            for text in ("I love pizza.", "My sister lives in Lisbon.", "I drive a red car."):
                client.post(f"/agents/{agent}/memory/archival", json={"content": text})
            turn = {"content": "What do you know about my family?", "stream": True}

            def each(name: str, request: Callable[[], Any]) -> None:
                def work() -> None:
                    response = request()
                    assert response.status_code < 300, response.text

                work()  # warm: caches, the search index loaded
                time.sleep(0.3)
                before = Tally(**vars(table.tally))
                for _ in range(n):
                    work()
                time.sleep(0.5)  # background writes (memory runs, copies) land
                spent = table.tally - before
                rows.append((name, Tally(*(v / n for v in vars(spent).values()))))

            each(
                "streamed turn (offline model)",
                lambda: client.post(f"/conversations/{conversation}/messages", json=turn),
            )
            each(
                "seed 004 /memory/add, 1 message, its run",
                lambda: client.post(
                    "/memory/add",
                    json={
                        "user_id": "ada",
                        "messages": [{"role": "user", "content": "I prefer tea in the morning."}],
                        "wait_for_completion": True,
                    },
                ),
            )
            each(
                "archival search",
                lambda: client.get(
                    f"/agents/{agent}/memory/archival/search", params={"query": "family"}
                ),
            )
            each(
                "seed 002 POST /messages",
                lambda: client.post(
                    "/messages", json={"agent_name": "Ada", "role": "user", "content": "Noted."}
                ),
            )
            each(
                "seed 002 POST /context",
                lambda: client.post("/context/Ada", json={"query": "family"}),
            )
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20)
    args = parser.parse_args()
    rows = measure(args.n)
    columns = ("calls", "reads", "writes", "RRU", "WRU")
    print(f"{'per request':42} " + " ".join(f"{c:>6}" for c in columns) + "   bytes  $/1M")
    for name, t in rows:
        cost = t.rru * PER_MILLION_RRU + t.wru * PER_MILLION_WRU
        numbers = " ".join(f"{v:6.1f}" for v in (t.calls, t.reads, t.writes, t.rru, t.wru))
        print(f"{name:42} {numbers} {t.stored:7.0f}  {cost:.2f}")


if __name__ == "__main__":
    main()
