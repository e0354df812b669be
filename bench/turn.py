"""What a chat turn adds before the model's first token, on SQLite and on DynamoDB Local.

For each engine the app runs under uvicorn on 127.0.0.1 (in a thread), talking to the fake
OpenAI of the tests, which answers at once and runs in a process of its own, as a real
provider does. After a warm-up, N turns go through `POST /conversations/{id}/messages`
one after another; each is timed from sending the request to the first `text.delta`
event. Between turns, the request the app sends the model (seen once by a fake in this
process during the warm-up) is sent to the fake directly, timed to its first text chunk.
The table shows p50 and p95 of both, and the overhead (ours minus direct, at p50 and p95).
`CPU/turn` is this process's CPU time (user and system, every thread: the app, its store's
threads, and the client reading the stream) from sending a turn's request to the end of its
stream, on average: the client's share is the same on both engines, so the difference
between the rows is the engines' (DynamoDB Local's own work is in a process of its own).

A second baseline sends that request through the official OpenAI SDK (as our server does),
to its first text delta: the difference to it is what our server adds beyond the SDK.

It also counts the sequential store round trips a turn makes before the LLM call
(`api/store/rounds.py` wrapping the app's table), reads and writes separately: the calls
that started before the turn's first message write, since the runtime awaits every read
and then starts the user's message write together with the LLM call (which does not wait
for it). Over the N turns the most common count is shown, then any other count with its
number of turns (`2 3:14x`: 2, and 3 in 14 turns). The conversation grows over the run,
as it would (the continuity hook reads the last 10 turns).

    uv run python bench/turn.py [--n 200] [--warmup 10]

Targets: at most 3 ms p50 overhead on SQLite; after the ownership check one concurrent
round of reads (2 read rounds, 0 write rounds).

SQLite runs on a file in a temporary directory; DynamoDB Local is started by this script
(Java 17 and the npm package in tools/dynamodb-local) and stopped at the end. Exits
non-zero, after printing the SQLite row, when DynamoDB Local cannot start.
"""

import argparse
import asyncio
import collections
import json
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import openai

from api.config import Settings
from api.main import create_app
from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable
from api.store.dynamodb_local import DynamoDBLocal
from api.store.rounds import READS, Call, RoundCounter, rounds
from api.store.sqlite import SqliteTable
from api.store.table import Table
from bench.harness import (
    ENCRYPTION_KEY,
    OPENAI_KEY,
    TIMEOUT,
    agent_on,
    conversation_of,
    fake_in_a_process,
    is_text_delta,
    serve,
    time_to_first,
    use_fake,
)
from bench.report import Report, on_both_engines, p50_p95_ms
from tests.fakes.llm_servers import start_fake_openai

TABLE_NAME = "bench-turn"


@dataclass(frozen=True)
class Result:
    engine: str
    ours: list[float]  # seconds to the first text.delta
    direct: list[float]  # seconds to the fake's first text chunk
    sdk: list[float]  # seconds to the first text delta through the OpenAI SDK
    read_rounds: list[int]  # per turn, before the LLM call
    write_rounds: list[int]
    cpu: list[float]  # seconds of this process's CPU per turn, request to the stream's end


def time_through_sdk(client: openai.OpenAI, shape: dict[str, Any]) -> float:
    """Seconds to the first text delta of the same request through the official SDK."""
    start = time.perf_counter()
    first: float | None = None
    with client.chat.completions.create(**shape) as stream:
        for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter()
    if first is None:
        raise RuntimeError("the fake streamed no text through the SDK")
    return first - start


def is_openai_text(name: str, data: str) -> bool:
    if data == "[DONE]":
        return False
    choices = json.loads(data).get("choices") or [{}]
    return bool(choices[0].get("delta", {}).get("content"))


def calls_before_the_llm(calls: list[Call]) -> list[Call]:
    """The calls that started before the turn's first message write: the runtime awaits
    every read first, then starts that write as it starts the LLM call."""
    # The user's message is put alone, or first in the transaction that opens the run.
    writes = [
        c for c in calls if c.operation in ("put", "transact_write") and " MESSAGE#" in c.target
    ]
    if not writes:
        raise RuntimeError("the turn stored no message")
    return [c for c in calls if c.start < writes[0].start]


def bench(table: Table, tmp: Path, n: int, warmup: int) -> Result:
    counter = RoundCounter(table)
    settings = Settings(
        auth_mode="local", sqlite_path=tmp / "unused.db", encryption_key=ENCRYPTION_KEY
    )
    ours: list[float] = []
    direct: list[float] = []
    sdk: list[float] = []
    read_rounds: list[int] = []
    write_rounds: list[int] = []
    cpu: list[float] = []
    with (
        serve(create_app(settings, table=counter)) as root,
        httpx2.Client(base_url=root, timeout=TIMEOUT) as client,
        httpx2.Client(timeout=TIMEOUT) as llm,
    ):
        # The request the app sends the model, seen by a fake in this process...
        with start_fake_openai() as seen:
            agent_id = agent_on(client, seen.base_url)
            url = f"/conversations/{conversation_of(client, agent_id)}/messages"
            turn = {"content": "Hello, how are you?", "stream": True}
            for _ in range(warmup):
                time_to_first(client, url, turn, {}, is_text_delta)
            shape = seen.requests[-1]
        # ... and the timed turns against one in its own process.
        with (
            fake_in_a_process() as base_url,
            openai.OpenAI(base_url=base_url, api_key=OPENAI_KEY, max_retries=0) as sdk_client,
        ):
            use_fake(client, base_url)
            completions = base_url + "/chat/completions"
            auth = {"authorization": f"Bearer {OPENAI_KEY}"}
            for _ in range(warmup):
                time_to_first(client, url, turn, {}, is_text_delta)
            for _ in range(n):
                mark = counter.mark()
                cpu_start = time.process_time()
                ours.append(time_to_first(client, url, turn, {}, is_text_delta))
                cpu.append(time.process_time() - cpu_start)
                before = calls_before_the_llm(counter.since(mark))
                read_rounds.append(rounds(c for c in before if c.operation in READS))
                write_rounds.append(rounds(c for c in before if c.operation not in READS))
                direct.append(time_to_first(llm, completions, shape, auth, is_openai_text))
                sdk.append(time_through_sdk(sdk_client, shape))
    return Result(table.engine, ours, direct, sdk, read_rounds, write_rounds, cpu)


def bench_sqlite(n: int, warmup: int) -> Result:
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as tmp:
        table = SqliteTable(Path(tmp) / "bench.db", TABLE_NAME, load_definition())
        try:
            return bench(table, Path(tmp), n, warmup)
        finally:
            asyncio.run(table.close())


def bench_dynamodb_local(server: DynamoDBLocal, n: int, warmup: int) -> Result:
    name = f"{TABLE_NAME}-{uuid.uuid4().hex[:8]}"
    table = DynamoTable(name, load_definition(), endpoint_url=server.endpoint)
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as tmp:
        try:
            return bench(table, Path(tmp), n, warmup)
        finally:
            asyncio.run(table.close())


def counted(values: list[int]) -> str:
    """The most common count, then how many turns had each other count."""
    (mode, _), *others = collections.Counter(values).most_common()
    return " ".join([str(mode), *(f"{value}:{turns}x" for value, turns in sorted(others))])


COLUMNS = (
    "engine",
    "ours p50",
    "ours p95",
    "direct p50",
    "direct p95",
    "over p50",
    "over p95",
    "sdk p50",
    "over sdk p50",
    "CPU/turn",
    "read rounds",
    "write rounds",
)
WIDTHS = (8, 9, 9, 10, 10, 9, 9, 8, 12, 8, 12, 12)


def print_result(report: Report, r: Result) -> None:
    ours, direct, sdk = p50_p95_ms(r.ours), p50_p95_ms(r.direct), p50_p95_ms(r.sdk)
    overhead = (ours[0] - direct[0], ours[1] - direct[1])
    times = (*ours, *direct, *overhead, sdk[0], ours[0] - sdk[0], 1000 * statistics.mean(r.cpu))
    cells = (r.engine, *(f"{t:.2f}" for t in times), counted(r.read_rounds))
    report.print((*cells, counted(r.write_rounds)))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=200, help="timed turns per engine")
    parser.add_argument("--warmup", type=int, default=10, help="untimed turns first")
    args = parser.parse_args(argv)
    if args.n < 2:
        parser.error("--n must be at least 2 to compute percentiles")
    if args.warmup < 1:
        parser.error("--warmup must be at least 1: it gives the request sent directly")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"{args.n} sequential turns per engine after {args.warmup} warm-up turns; ms\n")
    report = Report(COLUMNS, WIDTHS)
    return on_both_engines(
        lambda: print_result(report, bench_sqlite(args.n, args.warmup)),
        lambda server: print_result(report, bench_dynamodb_local(server, args.n, args.warmup)),
    )


if __name__ == "__main__":
    sys.exit(main())
