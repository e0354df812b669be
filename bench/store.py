"""Latency of the storage port's operations on SQLite and on DynamoDB Local.

For each engine, through the public `Table` API only: `get` of an existing item, `put` of a new
item, `query` of a partition holding 50 items, and `transact_write` of two `Put`s; then `put`
of a message's searchable copy (2 kB of text, metadata and a 256-dimension vector), and
`transact_write` of the writes a turn stores its answer with (the message under its
condition, the check that its conversation is open, the copy; the search engine's change
log aside). Each operation is warmed up, then run N times
one after another; the table shows the median and 95th-percentile latency, the sequential
throughput (1 / mean latency) and this process's CPU per call (the SQLite thread's included;
on DynamoDB Local, the client's side only).

SQLite runs on a file in a temporary directory; DynamoDB Local is started by this script
(Java 17 and the npm package in tools/dynamodb-local) and stopped at the end.

    uv run python bench/store.py [--n 300] [--warmup 30]

Exits non-zero, after printing the SQLite rows, when DynamoDB Local cannot start.
"""

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from api.conversations.messages import repository as messages
from api.conversations.messages.models import Message
from api.conversations.messages.service import copy_item
from api.conversations.models import Conversation
from api.search import vectors
from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable
from api.store.dynamodb_local import DynamoDBLocal
from api.store.sqlite import SqliteTable
from api.store.table import SK, Item, Key, Put, Table, TxOp
from bench.report import Report, on_both_engines, p50_p95_ms

TABLE_NAME = "bench"
QUERY_PARTITION = "bench#query"
QUERY_ITEMS = 50
GET_KEY = Key("bench#get", "item")
PAYLOAD = "x" * 200  # a short memory's worth of text

Operation = Callable[[int], Awaitable[None]]


@dataclass(frozen=True)
class Result:
    engine: str
    operation: str
    p50_ms: float
    p95_ms: float
    ops_per_s: float
    cpu_us: float


def item(pk: str, sk: str) -> Item:
    return {"pk": pk, "sk": sk, "type": "bench", "text": PAYLOAD, "n": 1}


OWNER = "bench@example.com"
CREATED = datetime(2026, 1, 1, tzinfo=UTC)
CONVERSATION = Conversation(
    conversation_id="bench-conversation",
    created_by=OWNER,
    agent_id="bench-agent",
    created_at=CREATED,
    updated_at=CREATED,
)
MESSAGE = Message(
    conversation_id="bench-conversation",
    message_id="bench-message",
    role="assistant",
    content=("A turn's answer, long enough to be typical: é ü ✓. " * 45)[:2048],
    actor_id="bench-agent",
    metadata={"source": "chat", "score": 0.75, "tags": ["a", "b"], "nested": {"n": 3}},
    created_at=CREATED,
    ttl=1_790_000_000,
)
VECTOR = np.random.default_rng(1).standard_normal(256).astype(np.float32)


COPY_ITEM = copy_item("bench-agent", MESSAGE, vectors.attributes(VECTOR, "bench-model"))
MESSAGE_OPS = messages.recorded_ops(OWNER, [MESSAGE], [COPY_ITEM])


def fresh_keys(ops: list[TxOp], i: int) -> list[TxOp]:
    """The same writes on items not written yet: each iteration puts new ones."""
    return [
        Put({**op.item, SK: f"{op.item[SK]}#{i:06d}"}, condition=op.condition)
        if isinstance(op, Put)
        else op
        for op in ops
    ]


async def seed(table: Table) -> None:
    await table.put(item(GET_KEY.pk, GET_KEY.sk))
    await table.put(CONVERSATION.to_dynamo_item())  # the open conversation a turn checks
    await table.batch_write(
        puts=[item(QUERY_PARTITION, f"item#{i:03d}") for i in range(QUERY_ITEMS)]
    )


def operations(table: Table) -> dict[str, Operation]:
    """Each operation takes the iteration's number, so that writes go to fresh keys."""

    async def get(i: int) -> None:
        if await table.get(GET_KEY) is None:
            raise RuntimeError("the seeded item is missing")

    async def put(i: int) -> None:
        await table.put(item("bench#put", f"item#{i:06d}"))

    async def query(i: int) -> None:
        page = await table.query(QUERY_PARTITION)
        if len(page.items) != QUERY_ITEMS:
            raise RuntimeError(f"query returned {len(page.items)} items, not {QUERY_ITEMS}")

    async def transact_write(i: int) -> None:
        pk = f"bench#tx#{i:06d}"
        await table.transact_write([Put(item(pk, "a")), Put(item(pk, "b"))])

    async def put_message(i: int) -> None:
        await table.put({**COPY_ITEM, "sk": f"Recall#put#{i:06d}"})

    async def transact_message(i: int) -> None:
        await table.transact_write(fresh_keys(MESSAGE_OPS, i))

    return {
        "get": get,
        "put": put,
        "query (50 items)": query,
        "transact_write (2 puts)": transact_write,
        "put (message copy)": put_message,
        "transact_write (message)": transact_message,
    }


async def measure(operation: Operation, n: int, warmup: int) -> tuple[list[float], float]:
    """Seconds taken by each of n sequential calls, after `warmup` untimed calls, and the
    process's CPU seconds for all n."""
    for i in range(warmup):
        await operation(-1 - i)
    latencies = []
    cpu = time.process_time()
    for i in range(n):
        start = time.perf_counter()
        await operation(i)
        latencies.append(time.perf_counter() - start)
    return latencies, time.process_time() - cpu


def summarise(engine: str, operation: str, latencies: list[float], cpu: float) -> Result:
    p50, p95 = p50_p95_ms(latencies)
    return Result(
        engine,
        operation,
        p50,
        p95,
        ops_per_s=1 / statistics.fmean(latencies),
        cpu_us=cpu / len(latencies) * 1e6,
    )


async def bench(table: Table, n: int, warmup: int) -> list[Result]:
    await table.create()
    await seed(table)
    results = []
    for name, operation in operations(table).items():
        results.append(summarise(table.engine, name, *await measure(operation, n, warmup)))
    return results


async def bench_sqlite(n: int, warmup: int) -> list[Result]:
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        table = SqliteTable(Path(tmp) / "bench.db", TABLE_NAME, load_definition())
        try:
            return await bench(table, n, warmup)
        finally:
            await table.close()


async def bench_dynamodb_local(server: DynamoDBLocal, n: int, warmup: int) -> list[Result]:
    table = DynamoTable(TABLE_NAME, load_definition(), endpoint_url=server.endpoint)
    try:
        return await bench(table, n, warmup)
    finally:
        await table.close()


COLUMNS = ("engine", "operation", "p50 ms", "p95 ms", "ops/s", "CPU µs")
WIDTHS = (10, 26, 9, 9, 9, 9)


def print_results(report: Report, results: list[Result]) -> None:
    for r in results:
        report.print(
            (
                r.engine,
                r.operation,
                f"{r.p50_ms:.2f}",
                f"{r.p95_ms:.2f}",
                f"{r.ops_per_s:.0f}",
                f"{r.cpu_us:.0f}",
            )
        )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=300, help="timed iterations per operation")
    parser.add_argument("--warmup", type=int, default=30, help="untimed iterations first")
    args = parser.parse_args(argv)
    if args.n < 2:
        parser.error("--n must be at least 2 to compute percentiles")
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"{args.n} sequential calls per operation after {args.warmup} warm-up calls\n")
    report = Report(COLUMNS, WIDTHS, text=2)
    return on_both_engines(
        lambda: print_results(report, asyncio.run(bench_sqlite(args.n, args.warmup))),
        lambda server: print_results(
            report, asyncio.run(bench_dynamodb_local(server, args.n, args.warmup))
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
