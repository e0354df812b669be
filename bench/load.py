"""Turns under load, measured from outside: the server (`agent-memory serve --workers N`, on
a SQLite file), the fake model (bench/fake_model.py, the tests' fake OpenAI) and the client
(this script) each in a process of its own.

Scenarios, for each worker count (1 and one per core by default):

- `sequential`: turns one after another in one conversation, the model answering at once.
- `concurrent N`: N streamed turns started together, each in its own conversation, the
  model streaming 40 chunks over about 1 s.
- `open N`: N streams held open together, the model sending one chunk and then nothing for
  10 s: what an open stream costs in memory.

Columns: turns completed and failed; the time the server added to the first text (the
client's time to the first `text.delta` less the model's own time to that chunk, which the
fake writes into it) p50, p95 and max; turns per second (completed over the time from the
first request to the last stream's end); the server's CPU per completed turn (all its
processes, counted until it is idle again: what turns leave for after their streams' end,
such as their messages' vectors, is theirs); its peak resident memory (the sum of its
processes' high-water marks); and, for `open`, its resident memory less before, per open
stream, at the moment the most were open (a note says how many if not all: starting 1,000
turns may take longer than the model's silence).

`--backend static` (or any embedding backend) sets the server's MEMORY_EMBEDDING_BACKEND.
`--store dynamodb` runs the server on DynamoDB Local (started by this script, a table per
worker count) instead of a SQLite file; DynamoDB Local's own CPU is not the server's.

    uv run python bench/load.py              # everything (about 3 minutes on 2 cores)
    uv run python bench/load.py --quick      # a subset, about a minute
    uv run python bench/load.py --workers 2 --concurrency 200 --open 0 --sequential 0

`--open-loop` runs, in place of the scenarios, latency at a given rate, as services are
judged: for each of `--rates` (turns/s, 20, 50, 80 and 110 by default) turns arrive for
`--rate-seconds` (12) as a Poisson process (exponential gaps, `--seed`), whatever the
server is doing, each a 40-chunk `[stream]` turn (as in `concurrent`) in a conversation of
its own. Each is timed from when it was due, not from when the client sent it: a slow
server cannot slow the load and hide its own delay, and a late client counts against the
server. Columns: turns due, completed, failed; the added time to the first text (from the
due time) p50, p95, p99; the server's CPU per completed turn; the client's lag (how late
it started turns; about 1 ms is its timer's granularity) at p95 and its largest; the
client's own CPU over the rate's time; how busy the machine's cores were meanwhile (every
process, these included: at 100% the turns queued for a core, whoever's work held it);
the 1-minute load average at the rate's end (which counts these processes too). Then
the highest rate held, with p95 <= 50 ms and no failure, every lower rate held too. A rate
starts once the last one's turns have all ended. One asyncio client sends everything,
through a connection pool without a limit.

    uv run python bench/load.py --open-loop                  # about 2.5 minutes
    uv run python bench/load.py --open-loop --workers 2 --rates 50,100,150 --rate-seconds 15

Numbers on a machine doing other work are upper bounds: the load average is printed with
each table. Targets (issue 15): <= 6 ms CPU per 40-chunk turn; >= 150 turns/s with one
worker per core; 200 concurrent with p95 <= 250 ms; 500 with no failure and p95 <= 1 s;
sequential p50 <= 3 ms; <= 100 kB per open stream.
"""

import argparse
import asyncio
import codecs
import math
import os
import random
import re
import resource
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import httpx2
import uvloop

from api.store.dynamodb_local import DynamoDBLocal
from bench.common import CORES, ServerProcess, server_process
from bench.fake_model import MODEL_TIME_PREFIX, STALL, STREAM
from bench.harness import (
    agent_on,
    conversation_of,
    fake_in_a_process,
    sse_blocks,
)
from bench.report import Report

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
MODEL_TIME = re.compile(re.escape(MODEL_TIME_PREFIX) + r"([0-9.]+)")
PROMPT = "Hello, how are you?"  # then the fake's tag: the reply it asks for
TURN_TIMEOUT = 120.0
WARM_TURNS_PER_WORKER = 20
SAMPLE_SECONDS = 0.25  # how often an open-streams run samples the server's memory


@dataclass
class Turn:
    completed: bool = False
    added: float | None = None  # seconds the server added to the first text
    problem: str | None = None
    lag: float = 0.0  # seconds the client started the turn after it was due


def added_seconds(due: float, first_text: float, model_seconds: float) -> float:
    """The time the server added to a turn's first text: from when the turn was due to
    start, not from when the client got round to it, less the model's own time to that
    text. A client held up by a slow server would otherwise send fewer, later turns and
    leave their wait out: the lateness counts against the server under test."""
    return first_text - due - model_seconds


async def one_turn(
    client: aiohttp.ClientSession,
    conversation_id: str,
    tag: str = "",
    first_text: "asyncio.Queue[None] | None" = None,
    due: float | None = None,
) -> Turn:
    """One streamed turn: the time to its first text, and whether it completed; timed from
    `due` (a `time.perf_counter()` reading) when it was scheduled, else from now."""
    turn = Turn()
    url = f"/conversations/{conversation_id}/messages"
    start = time.perf_counter()
    if due is None:
        due = start
    turn.lag = start - due
    try:
        body = {"content": f"{PROMPT} {tag}", "stream": True}
        async with client.post(url, json=body) as r:
            if r.status != 200:
                turn.problem = f"{r.status} {(await r.text())[:200]}"
                return turn
            buffer, tail = "", ""
            text = codecs.getincrementaldecoder("utf-8")()  # a character may span two reads
            async for raw in r.content.iter_any():
                chunk = text.decode(raw)
                if turn.added is None:
                    found, buffer = sse_blocks(buffer + chunk)
                    for name, data in found:
                        if name == "text.delta" and turn.added is None:
                            model = MODEL_TIME.search(data)
                            model_seconds = float(model.group(1)) if model else 0.0
                            turn.added = added_seconds(due, time.perf_counter(), model_seconds)
                            if first_text is not None:
                                first_text.put_nowait(None)
                tail = (tail + chunk)[-400:]  # only the end says how it ended
            turn.completed = "event: run.completed" in tail
            if not turn.completed:
                turn.problem = tail.strip().rsplit("\n", 1)[-1][:200]
    except (TimeoutError, aiohttp.ClientError) as e:
        turn.problem = f"{type(e).__name__}: {e}"
    return turn


@dataclass
class Outcome:
    scenario: str
    turns: list[Turn]
    seconds: float
    cpu_seconds: float
    peak_kib: int
    per_stream_kib: float | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def completed(self) -> int:
        return sum(t.completed for t in self.turns)


@asynccontextmanager
async def client(url: str) -> AsyncIterator[aiohttp.ClientSession]:
    """The turns' HTTP client. aiohttp parses responses in C: with httpx the client took
    about as much CPU per turn as the server under test, on the same two cores."""
    connector = aiohttp.TCPConnector(limit=0)  # as many connections as turns at once
    timeout = aiohttp.ClientTimeout(total=TURN_TIMEOUT)
    async with aiohttp.ClientSession(url, connector=connector, timeout=timeout) as session:
        yield session


async def conversations(url: str, agent_id: str, count: int) -> list[str]:
    async with client(url) as http:
        gate = asyncio.Semaphore(20)

        async def one() -> str:
            async with gate, http.post("/conversations", json={"agent_id": agent_id}) as made:
                if made.status != 201:
                    raise RuntimeError(f"set-up failed: {made.status} {await made.text()}")
                found: str = (await made.json())["id"]
                return found

        return list(await asyncio.gather(*(one() for _ in range(count))))


async def sequential(server: ServerProcess, conversation_id: str, n: int) -> Outcome:
    async with client(server.url) as http:
        for _ in range(3):  # warm: the provider's client, the conversation's first reads
            await one_turn(http, conversation_id)
        cpu, start = server.cpu_seconds(), time.perf_counter()
        turns = [await one_turn(http, conversation_id) for _ in range(n)]
        seconds = time.perf_counter() - start
    return Outcome(
        "sequential",
        turns,
        seconds,
        await server.cpu_seconds_once_idle() - cpu,
        server.memory_kib("VmHWM"),
    )


async def concurrent(
    server: ServerProcess, ids: Sequence[str], name: str, tag: str = STREAM
) -> Outcome:
    async with client(server.url) as http:
        cpu, start = server.cpu_seconds(), time.perf_counter()
        turns = await asyncio.gather(*(one_turn(http, c, tag) for c in ids))
        seconds = time.perf_counter() - start
    cpu = await server.cpu_seconds_once_idle() - cpu
    return Outcome(name, list(turns), seconds, cpu, server.memory_kib("VmHWM"))


async def held_open(server: ServerProcess, ids: Sequence[str], stall_seconds: float) -> Outcome:
    """Streams whose model went silent: the server's memory per open stream, sampled while
    they run, at the moment the most were open (a turn still starting counts against
    them: the figure errs high)."""
    first_text: asyncio.Queue[None] = asyncio.Queue()
    async with client(server.url) as http:
        before = server.memory_kib("VmRSS")
        cpu, start = server.cpu_seconds(), time.perf_counter()
        running = [asyncio.ensure_future(one_turn(http, c, STALL, first_text)) for c in ids]
        most, at_most = 0, before
        while not all(t.done() for t in running):
            await asyncio.sleep(SAMPLE_SECONDS)
            # With their first text (each put one in the queue) and not ended.
            open_now = first_text.qsize() - sum(t.done() for t in running)
            if open_now > most:
                most, at_most = open_now, server.memory_kib("VmRSS")
        turns = [t.result() for t in running]
        seconds = time.perf_counter() - start
    per_stream = (at_most - before) / most if most else None
    return Outcome(
        f"open {len(ids)}",
        turns,
        seconds,
        await server.cpu_seconds_once_idle() - cpu,
        server.memory_kib("VmHWM"),
        per_stream_kib=per_stream,
        problems=[] if most == len(ids) else [f"at most {most} of {len(ids)} open at once"],
    )


def poisson_schedule(rate: float, seconds: float, seed: int) -> list[float]:
    """When each turn is due, in seconds from the start: a Poisson process of `rate` turns a
    second over `seconds`, its gaps exponential. The generator is the schedule's own, so a
    seed gives the same turns in every run and for every worker count."""
    draw = random.Random(seed)
    due: list[float] = []
    at = draw.expovariate(rate)
    while at < seconds:
        due.append(at)
        at += draw.expovariate(rate)
    return due


@dataclass
class AtRate:
    """The turns of one rate of an open-loop run, and what they cost."""

    rate: float
    turns: list[Turn]
    seconds: float  # from the first turn's due time to the last turn's end
    cpu_seconds: float  # the server's
    client_cpu_seconds: float  # this process's: whether the client kept up
    load: float  # the machine's 1-minute load average at the end
    busy: float = 0.0  # the share of all its cores the machine was busy, every process's

    @property
    def completed(self) -> int:
        return sum(t.completed for t in self.turns)

    @property
    def failed(self) -> int:
        return len(self.turns) - self.completed


HELD_P95_MS = 50.0
LATE_P95_MS = 5.0  # a client later than this at p95 is part of what it measured
LEAD_SECONDS = 0.05  # between scheduling the first turn and its due time


def held(o: AtRate) -> bool:
    p95 = percentiles([t.added for t in o.turns if t.added is not None], 95)
    return o.failed == 0 and bool(o.turns) and p95[0] <= HELD_P95_MS


def held_rate(outcomes: Sequence[AtRate]) -> float | None:
    """The highest rate held (p95 of the added time within HELD_P95_MS, no turn failed)
    with every lower rate held too: one lucky rate above a failed one is noise, not
    capacity."""
    best = None
    for o in sorted(outcomes, key=lambda o: o.rate):
        if not held(o):
            break
        best = o.rate
    return best


def percentiles(seconds: Sequence[float], *cuts: int) -> list[float]:
    """The given percentiles (100: the largest) of `seconds`, in ms; inf for each when
    there is nothing."""
    ms = sorted(s * 1000 for s in seconds)
    if len(ms) < 2:
        return [ms[0] if ms else math.inf for _ in cuts]
    quantiles = [*statistics.quantiles(ms, n=100, method="inclusive"), ms[-1]]
    return [quantiles[cut - 1] for cut in cuts]


async def at_rate(
    server: ServerProcess, ids: Sequence[str], rate: float, due: Sequence[float]
) -> AtRate:
    """Turns started when `due` says (seconds from now), each in its own conversation, and
    timed from then, whatever the server is doing meanwhile: an open loop. One event loop
    sends them all; how late each started is in its `lag`."""
    if len(ids) < len(due):
        raise ValueError(f"{len(due)} turns need as many conversations, not {len(ids)}")
    async with client(server.url) as http:
        cpu, own, machine = server.cpu_seconds(), process_cpu_seconds(), machine_ticks()
        start = time.perf_counter() + LEAD_SECONDS
        running = []
        for offset, conversation_id in zip(due, ids, strict=False):
            # Again if early: uvloop's timers count whole milliseconds from the loop's cached
            # clock and may wake a little before the turn is due. (A wait for a time, which
            # no event would signal.)
            while (wait := start + offset - time.perf_counter()) > 0:  # noqa: ASYNC110
                await asyncio.sleep(wait)
            turn = one_turn(http, conversation_id, STREAM, due=start + offset)
            running.append(asyncio.ensure_future(turn))
        turns = list(await asyncio.gather(*running))
        seconds = time.perf_counter() - start
    return AtRate(
        rate,
        turns,
        seconds,
        await server.cpu_seconds_once_idle() - cpu,
        process_cpu_seconds() - own,
        os.getloadavg()[0],
        busy_share(machine, machine_ticks()),
    )


def machine_ticks() -> tuple[int, int]:
    """All the machine's CPU time so far and the idle part of it, in ticks (/proc/stat)."""
    with open("/proc/stat") as stat:
        ticks = [int(n) for n in stat.readline().split()[1:]]
    return sum(ticks), ticks[3] + ticks[4]  # idle, iowait


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    total = after[0] - before[0]
    return 1 - (after[1] - before[1]) / total if total else 0.0


def process_cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


RATE_COLUMNS = (
    "workers",
    "rate/s",
    "turns",
    "completed",
    "failed",
    "added p50",
    "p95",
    "p99",
    "CPU ms/turn",
    "lag p95",
    "lag max",
    "client CPU",
    "busy",
    "load",
)
RATE_WIDTHS = (7, 6, 5, 9, 6, 9, 8, 8, 11, 7, 7, 10, 4, 5)


def rate_row(workers: int, o: AtRate) -> list[str]:
    added = percentiles([t.added for t in o.turns if t.added is not None], 50, 95, 99)
    lag = percentiles([t.lag for t in o.turns], 95, 100)
    done = o.completed
    return [
        str(workers),
        f"{o.rate:g}",
        str(len(o.turns)),
        str(done),
        str(o.failed),
        *(f"{ms:.1f}" for ms in added),
        f"{o.cpu_seconds * 1000 / done:.1f}" if done else "-",
        *(f"{ms:.1f}" for ms in lag),
        f"{o.client_cpu_seconds * 100 / o.seconds:.0f}%" if o.seconds else "-",
        f"{o.busy * 100:.0f}%",
        f"{o.load:.2f}",
    ]


async def open_loop(
    server: ServerProcess,
    ids: Sequence[str],
    schedules: dict[float, list[float]],
    workers: int,
    report: Report,
) -> int:
    """Every rate in turn, each after the last one's turns have all ended; the turns that
    failed."""
    outcomes = []
    for rate, due in schedules.items():
        o = await at_rate(server, ids, rate, due)
        outcomes.append(o)
        report.print(rate_row(workers, o))
        problems = [t.problem for t in o.turns if not t.completed and t.problem]
        if problems:
            print(f"  rate {o.rate:g}: {len(problems)} failed, e.g. {problems[0]}")
        late = percentiles([t.lag for t in o.turns], 95)[0]
        if late > LATE_P95_MS:
            print(f"  rate {o.rate:g}: the client was late, {late:.1f} ms at p95 (counted)")
        await asyncio.sleep(1)  # the last writes of the runs settle
    best = held_rate(outcomes)
    print(
        f"  {workers} worker(s): highest rate held (p95 <= {HELD_P95_MS:g} ms, no failure): "
        + (f"{best:g} turns/s" if best is not None else "none of those measured")
    )
    return sum(o.failed for o in outcomes)


COLUMNS = (
    "workers",
    "scenario",
    "completed",
    "failed",
    "added p50",
    "p95",
    "max",
    "turns/s",
    "CPU ms/turn",
    "peak MiB",
    "kB/stream",
)
WIDTHS = (7, 15, 9, 6, 9, 8, 8, 7, 11, 8, 9)


def row(workers: int, o: Outcome) -> list[str]:
    added = sorted(t.added * 1000 for t in o.turns if t.added is not None)
    if len(added) >= 2:
        cuts = statistics.quantiles(added, n=100, method="inclusive")
        times = [f"{cuts[49]:.1f}", f"{cuts[94]:.1f}", f"{added[-1]:.1f}"]
    else:
        times = [f"{added[0]:.1f}"] * 3 if added else ["-"] * 3
    done = o.completed
    return [
        str(workers),
        o.scenario,
        str(done),
        str(len(o.turns) - done),
        *times,
        f"{done / o.seconds:.1f}" if o.seconds else "-",
        f"{o.cpu_seconds * 1000 / done:.1f}" if done else "-",
        f"{o.peak_kib / 1024:.0f}",
        f"{o.per_stream_kib * 1.024:.1f}" if o.per_stream_kib is not None else "-",
    ]


async def run_workers(
    workers: int,
    fake: str,
    args: argparse.Namespace,
    report: Report,
    dynamodb: DynamoDBLocal | None = None,
) -> int:
    """Every scenario against a server of `workers` workers (on SQLite, or on `dynamodb`);
    the turns that failed."""
    failed = 0
    store = None
    if dynamodb is not None:
        store = {
            "STORE": "dynamodb",
            "DYNAMODB_ENDPOINT": dynamodb.endpoint,
            "DYNAMODB_TABLE": f"bench-load-{uuid.uuid4().hex[:8]}",
        }
    with (
        tempfile.TemporaryDirectory(prefix="bench-load-") as tmp,
        server_process(Path(tmp) / "load.db", ["--workers", str(workers)], store=store) as server,
    ):
        with httpx2.Client(base_url=server.url, timeout=30) as setup:
            agent_id = agent_on(setup, fake)
            first = conversation_of(setup, agent_id)
        if args.open_loop:
            schedules = {r: poisson_schedule(r, args.rate_seconds, args.seed) for r in args.rates}
            most = max(len(due) for due in schedules.values())
        else:
            most = max([*args.concurrency, args.open, 1])
        # One per turn (of the busiest rate, for the open loop: a rate's turns have all
        # ended before the next rate starts), since a conversation takes one turn at a time.
        ids = await conversations(server.url, agent_id, most)
        # Every worker warmed (imports on first use, the provider's client): enough turns
        # at once that each worker accepts some.
        warm = await concurrent(server, ids[: WARM_TURNS_PER_WORKER * workers], "warm", tag="")
        if warm.completed < len(warm.turns):
            raise RuntimeError(f"warm-up turns failed: {warm.turns[0].problem}")
        if args.open_loop:
            return await open_loop(server, ids, schedules, workers, report)
        scenarios: list[Awaitable[Outcome]] = []
        if args.sequential:
            scenarios.append(sequential(server, first, args.sequential))
        scenarios += [concurrent(server, ids[:n], f"concurrent {n}") for n in args.concurrency]
        if args.open:
            scenarios.append(held_open(server, ids[: args.open], args.open_seconds))
        for scenario in scenarios:
            o = await scenario
            report.print(row(workers, o))
            failed += len(o.turns) - o.completed
            problems = [t.problem for t in o.turns if not t.completed and t.problem]
            if problems:
                print(f"  {o.scenario}: {len(problems)} failed, e.g. {problems[0]}")
            for note in o.problems:
                print(f"  {o.scenario}: {note}")
            await asyncio.sleep(1)  # the last writes of the runs settle
    return failed


def numbers(text: str) -> list[int]:
    return [int(n) for n in text.split(",") if n.strip()] if text else []


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a subset, about a minute")
    parser.add_argument("--workers", default=f"1,{CORES}", help="worker counts, comma-separated")
    parser.add_argument("--sequential", type=int, default=200, help="sequential turns (0: none)")
    parser.add_argument("--concurrency", default="50,200,500", help="concurrent turns per burst")
    parser.add_argument("--open", type=int, default=1000, help="streams held open (0: none)")
    parser.add_argument("--open-seconds", type=float, default=10.0, help="the model's silence")
    parser.add_argument("--chunks", type=int, default=40, help="text chunks per streamed reply")
    parser.add_argument("--turn-seconds", type=float, default=1.0, help="over this long")
    parser.add_argument(
        "--open-loop",
        action="store_true",
        help="turns arriving at --rates instead of the scenarios above",
    )
    parser.add_argument("--rates", default="20,50,80,110", help="turns/s, comma-separated")
    parser.add_argument("--rate-seconds", type=float, default=12.0, help="turns arrive this long")
    parser.add_argument("--seed", type=int, default=7, help="of the arrivals' schedule")
    parser.add_argument(
        "--store", choices=("sqlite", "dynamodb"), default="sqlite", help="the server's store"
    )
    parser.add_argument(
        "--backend", help="the server's MEMORY_EMBEDDING_BACKEND (default: the server's own)"
    )
    args = parser.parse_args(argv)
    if args.backend:
        os.environ["MEMORY_EMBEDDING_BACKEND"] = args.backend  # the servers inherit it
    if args.quick:
        args.sequential, args.concurrency, args.open = 50, "50,200", 200
        args.open_seconds = 5.0
    args.workers = sorted(set(numbers(args.workers)))
    args.concurrency = numbers(args.concurrency)
    args.rates = sorted({float(r) for r in args.rates.split(",") if r.strip()})
    if args.open_loop and (not args.rates or min(args.rates) <= 0 or args.rate_seconds <= 0):
        parser.error("--open-loop needs rates and --rate-seconds above 0")
    if not args.workers or min(args.workers) < 1:
        parser.error("--workers needs counts of 1 or more")
    if args.sequential == 1:
        parser.error("--sequential must be 0 or at least 2 (percentiles)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    reply = f"{args.chunks} chunks over {args.turn_seconds:g} s"
    backend = os.environ.get("MEMORY_EMBEDDING_BACKEND", "the default")
    if args.open_loop:
        rates = ", ".join(f"{r:g}" for r in args.rates)
        print(
            f"{CORES} cores, load average {load}; embeddings: {backend}; model: {reply}; "
            "open loop: Poisson arrivals "
            f"at {rates} turns/s, {args.rate_seconds:g} s each, seed {args.seed}\n"
        )
        report = Report(RATE_COLUMNS, RATE_WIDTHS, text=1)
    else:
        print(
            f"{CORES} cores, load average {load}; store: {args.store}; embeddings: {backend}; "
            f"model: {reply}, or silent "
            f"{args.open_seconds:g} s for open streams\n"
        )
        report = Report(COLUMNS, WIDTHS, text=2)
    failed = 0
    model = ["--chunks", str(args.chunks), "--seconds", str(args.turn_seconds)]
    with (
        fake_in_a_process([*model, "--stall", str(args.open_seconds)]) as fake,
        asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
        DynamoDBLocal() if args.store == "dynamodb" else nullcontext() as dynamodb,
    ):
        for workers in args.workers:
            failed += runner.run(run_workers(workers, fake, args, report, dynamodb))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(f"\nload average after: {load}; the client used {own.ru_utime + own.ru_stime:.1f} s CPU")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
