"""What learning() adds to a model call: the time of a call inside the context over the same
call outside it, through the official OpenAI SDK, to the same fake model.

A memory server runs as a user runs it (`python -m api.cli serve`, one worker, SQLite in a
temporary directory, the default `static` embedding backend); the fake OpenAI runs in a
process of its own, as a real provider does, answering at once (or after 50 ms, for the
last two rows). Each row has an agent of its own, which starts with a `human` block and 40
messages and gains two messages with every intercepted call, as it would; every question
asked is new (a person's are), so each fetch embeds its query. Calls alternate
in blocks: BLOCK calls with no context, then BLOCK calls inside `learning()` (entered once
per block; entry and the exit's flush are not timed), so drift hits both sides alike.

    uv run --frozen python bench/client.py [--n 200] [--warmup 10]   (or -m bench.client)

Rows: `create` (a non-streamed chat completion) with memory injected and the exchange
captured, and with capture_only; a streamed completion read to its end; the same call
through AsyncOpenAI; and create to a model that takes 50 ms. Columns, at p50 and p95:
`outside`, the plain SDK call; `added`, inside minus outside; `/context`, the
interceptor's POST /context requests during the row, from sending to the answer read
(timed by wrapping the client's methods); `waited`, the part of that the call spent
waiting for the answer (a synchronous call sends the request, lets the SDK build its own,
then reads the answer: the rest was hidden behind the SDK's work); `own`, what is added
besides the wait (each call's time less its wait, minus outside): reading, formatting,
injecting, handing the capture over, and the SDK's own work slowed by the server's beside
it; `met a capture`, how many of the row's fetches were under way while a capture request
of the interceptor was (the server then takes both in turns). The last lines are
POST /context alone, on a quiet server, through the interceptor's own client (the way the
`/context` column's requests go): back to back, and each after 50 ms idle (what the 50 ms
model's rows compare with: a request that wakes a sleeping server costs more).

Target: at most 3 ms added at p50 on loopback. Capture is off the call's path, so
capture_only adds next to nothing; with memory the server's POST /context is added too.
"""

import sys
from pathlib import Path

if not __package__:
    # Run as a script, this file's folder comes first on sys.path, and this file would
    # shadow the `client` package it measures: the project's root takes the folder's place.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import asyncio
import itertools
import re
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionMessageParam

from bench.common import printing_process
from bench.report import Report, p50_p95_ms
from client import learning
from client.interceptor import DEFAULT_TIMEOUT
from client.server import MemoryServer as MemoryServerClient
from client.server import PendingContext
from tests.client.server_process import MemoryServer, memory_server

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 10
SLOW_MODEL_SECONDS = 0.05
QUESTIONS = [
    "What is my name?",
    "Which programming language do I prefer?",
    "Where do I live these days?",
    "What did I say about my sister?",
    "Remind me what my dog is called.",
]
FACTS = [
    "My name is Alice Moreau.",
    "I prefer Python, and Rust for the fast parts.",
    "I moved to Lisbon last spring.",
    "My sister Ines is a marine biologist.",
    "My dog is called Rex and he loves the beach.",
    "I work on a memory server for agents.",
    "I drink green tea, never coffee.",
    "My favourite book is The Left Hand of Darkness.",
]
COLUMNS = [
    "call",
    "outside p50",
    "p95",
    "added p50",
    "p95",
    "/context p50",
    "p95",
    "waited p50",
    "p95",
    "own p50",
    "p95",
    "met a capture",
]
WIDTHS = [30, 11, 6, 9, 6, 12, 6, 10, 6, 7, 6, 13]


@dataclass(frozen=True)
class Row:
    name: str
    outside: list[float]
    inside: list[float]
    fetches: list["Fetch"]  # the interceptor's POST /context requests during `inside`
    met: int  # of those, how many were under way while a capture request was


@dataclass(frozen=True)
class Fetch:
    """One POST /context: sent at `start`, its answer asked for at `asked` (the call
    worked meanwhile: the SDK built its request) and read at `end`."""

    start: float
    asked: float
    end: float


@dataclass
class Requests:
    """The interceptor's requests while a row runs, from its client's methods."""

    fetches: list[Fetch]
    captures: list[tuple[float, float]]  # of each POST /messages/batch or /messages

    def met(self, fetches: list[Fetch]) -> int:
        """The fetches that overlapped a capture: the server had both at once."""
        return sum(
            any(f.start < c_end and c_start < f.end for c_start, c_end in self.captures)
            for f in fetches
        )


@contextmanager
def requests_timed() -> Iterator[Requests]:
    """Every POST /context and capture request the interceptor makes meanwhile (its
    client's request methods wrapped for the benchmark: they show the server's part)."""
    seen = Requests([], [])
    start_context = MemoryServerClient.start_context
    result = PendingContext.result
    originals = {
        name: getattr(MemoryServerClient, name) for name in ("add_messages", "add_message")
    }
    sent_at: dict[int, float] = {}

    def timed_start(self: MemoryServerClient, agent: str, query: str) -> PendingContext:
        start = time.perf_counter()
        pending = start_context(self, agent, query)
        sent_at[id(pending)] = start
        return pending

    def timed_result(self: PendingContext) -> object:
        asked = time.perf_counter()
        try:
            return result(self)
        finally:
            seen.fetches.append(Fetch(sent_at.pop(id(self)), asked, time.perf_counter()))

    def timing(name: str) -> Callable[..., object]:
        original = originals[name]

        def timed_call(self: MemoryServerClient, *args: object) -> object:
            start = time.perf_counter()
            try:
                return original(self, *args)
            finally:
                seen.captures.append((start, time.perf_counter()))

        return timed_call

    MemoryServerClient.start_context = timed_start  # type: ignore[method-assign]
    PendingContext.result = timed_result  # type: ignore[method-assign,assignment]
    for name in originals:
        setattr(MemoryServerClient, name, timing(name))
    try:
        yield seen
    finally:
        MemoryServerClient.start_context = start_context  # type: ignore[method-assign]
        PendingContext.result = result  # type: ignore[method-assign]
        for name, original in originals.items():
            setattr(MemoryServerClient, name, original)


def row(
    server: MemoryServer, name: str, measure: Callable[[str], tuple[list[float], list[float]]]
) -> Row:
    """One row, on an agent of its own (seeded alike), so that rows do not grow each
    other's memory."""
    agent = "bench-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    seed(server, agent)
    with requests_timed() as seen:
        outside, inside = measure(agent)
    fetches = seen.fetches[-len(inside) :] if seen.fetches else []
    return Row(name, outside, inside, fetches, seen.met(fetches))


@contextmanager
def fake_in_a_process(delay: float = 0.0) -> Iterator[str]:
    """The fake OpenAI in a process of its own, as a real provider is, answering "ok"
    after `delay` seconds; its base URL."""
    script = (
        "import time\n"
        "from tests.fakes.llm_servers import Reply, start_fake_openai\n"
        "with start_fake_openai() as fake:\n"
        f"    fake.next_reply = lambda: Reply(text='ok', delay_seconds={delay!r})\n"
        "    print(fake.base_url, flush=True)\n"
        "    time.sleep(10**6)\n"
    )
    with printing_process([sys.executable, "-c", script], ROOT, "the fake OpenAI process") as url:
        yield url


def question(n: int) -> str:
    """A question no call of the run asked before, as a person's are: the server's cache of
    recent vectors must not spare the fetch its query's embedding (the capture that follows
    reuses it, as it does for a person)."""
    return f"{QUESTIONS[n % len(QUESTIONS)]} (#{next(_ASKED)})"


_ASKED = itertools.count()


def messages(n: int) -> list[ChatCompletionMessageParam]:
    return [{"role": "user", "content": question(n)}]


def seed(server: MemoryServer, agent: str) -> None:
    """A new agent with a `human` block and 40 messages."""
    http = server.http
    assert http.post("/agents", json={"name": agent}).status_code in (200, 201)
    block = {"agent_name": agent, "label": "human", "value": "Name: Alice\nCity: Lisbon"}
    assert http.post("/memory-blocks", json=block).status_code == 201
    for n in range(40):
        fact = FACTS[n % len(FACTS)]
        for role, content in (("user", fact), ("assistant", f"Noted ({n}): {fact.lower()}")):
            body = {"agent_name": agent, "role": role, "content": content}
            assert http.post("/messages", json=body).status_code == 201


def timed(call: Callable[[int], object], n: int) -> float:
    start = time.perf_counter()
    call(n)
    return time.perf_counter() - start


def alternate(
    server: MemoryServer,
    agent: str,
    call: Callable[[int], object],
    n: int,
    warmup: int,
    *,
    capture_only: bool = False,
) -> tuple[list[float], list[float]]:
    """`n` timed calls outside any context and `n` inside learning(), in blocks."""
    for i in range(warmup):
        call(i)
        with learning(agent, server_url=server.url, capture_only=capture_only):
            call(i)
    outside: list[float] = []
    inside: list[float] = []
    while len(inside) < n:
        size = min(BLOCK, n - len(inside))
        outside += [timed(call, len(outside)) for _ in range(size)]
        with learning(agent, server_url=server.url, capture_only=capture_only) as memory:
            inside += [timed(call, len(inside)) for _ in range(size)]
        assert memory.capture_failures == memory.context_failures == 0, memory.errors
    return outside, inside


def alternate_async(
    server: MemoryServer,
    agent: str,
    call: Callable[[int], Awaitable[object]],
    n: int,
    warmup: int,
) -> tuple[list[float], list[float]]:
    async def timed_async(i: int) -> float:
        start = time.perf_counter()
        await call(i)
        return time.perf_counter() - start

    async def run() -> tuple[list[float], list[float]]:
        for i in range(warmup):
            await call(i)
            async with learning(agent, server_url=server.url):
                await call(i)
        outside: list[float] = []
        inside: list[float] = []
        while len(inside) < n:
            size = min(BLOCK, n - len(inside))
            outside += [await timed_async(len(outside)) for _ in range(size)]
            async with learning(agent, server_url=server.url) as memory:
                inside += [await timed_async(len(inside)) for _ in range(size)]
            assert memory.capture_failures == memory.context_failures == 0, memory.errors
        return outside, inside

    return asyncio.run(run())


def context_alone(server: MemoryServer, n: int, pause: float = 0.0) -> list[float]:
    """POST /context on a new agent seeded as the others, with no write in between; with
    `pause`, that long idle before each (as between the calls of a model that takes it:
    both processes asleep, the request wakes them)."""
    agent = f"bench-context-{pause * 1000:.0f}ms"
    seed(server, agent)

    # The interceptor's own client (its fast path, when the URL allows), as the rows fetch.
    client = MemoryServerClient(server.url, api_key=None, timeout=DEFAULT_TIMEOUT)

    def fetch(i: int) -> float:
        if pause:
            time.sleep(pause)
        return timed(lambda i: client.context(agent, question(i)), i)

    try:
        return [fetch(i) for i in range(n)]
    finally:
        client.close()


def bench(n: int, w: int) -> tuple[list[Row], list[float], list[float]]:
    """The rows (n timed calls each side, after w untimed) and POST /context alone, back
    to back and after a pause as long as the slow model's answer."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        memory_server(Path(tmp) / "bench.db") as server,
        fake_in_a_process() as instant,
        fake_in_a_process(SLOW_MODEL_SECONDS) as slow,
        OpenAI(base_url=instant, api_key="sk-bench", max_retries=0) as sdk,
        OpenAI(base_url=slow, api_key="sk-bench", max_retries=0) as slow_sdk,
    ):

        def create(i: int) -> object:
            return sdk.chat.completions.create(model="gpt-4o-mini", messages=messages(i))

        def stream(i: int) -> object:
            chunks = sdk.chat.completions.create(
                model="gpt-4o-mini", messages=messages(i), stream=True
            )
            return list(chunks)

        def create_slow(i: int) -> object:
            return slow_sdk.chat.completions.create(model="gpt-4o-mini", messages=messages(i))

        asdk = AsyncOpenAI(base_url=instant, api_key="sk-bench", max_retries=0)

        async def acreate(i: int) -> object:
            return await asdk.chat.completions.create(model="gpt-4o-mini", messages=messages(i))

        slow_ms = f"{SLOW_MODEL_SECONDS * 1000:.0f} ms model"
        rows = [
            row(server, "create, memory + capture", lambda a: alternate(server, a, create, n, w)),
            row(
                server,
                "create, capture_only",
                lambda a: alternate(server, a, create, n, w, capture_only=True),
            ),
            row(
                server,
                "create stream=True, to the end",
                lambda a: alternate(server, a, stream, n, w),
            ),
            row(
                server,
                "AsyncOpenAI create, memory",
                lambda a: alternate_async(server, a, acreate, n, w),
            ),
            row(
                server,
                f"{slow_ms}: create, memory",
                lambda a: alternate(server, a, create_slow, n, w),
            ),
            row(
                server,
                f"{slow_ms}: capture_only",
                lambda a: alternate(server, a, create_slow, n, w, capture_only=True),
            ),
        ]
        return rows, context_alone(server, n), context_alone(server, n, SLOW_MODEL_SECONDS)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=200, help="timed calls per row and side")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls first")
    args = parser.parse_args(argv)
    if args.n < 2:
        parser.error("--n must be at least 2 to compute percentiles")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"{args.n} calls per row outside and inside learning(), after {args.warmup}; ms\n")
    rows, context, after_pause = bench(args.n, args.warmup)
    report = Report(COLUMNS, WIDTHS)
    for measured in rows:
        out50, out95 = p50_p95_ms(measured.outside)
        in50, in95 = p50_p95_ms(measured.inside)
        cells = [f"{v:.2f}" for v in (out50, out95, in50 - out50, in95 - out95)]
        # Each call inside made one POST /context, in order: without the time it waited
        # for the answer, what is left is the interceptor's own work (reading, formatting,
        # handing the capture over).
        fetched = len(measured.fetches) == len(measured.inside)
        if fetched:
            waited = [f.end - f.asked for f in measured.fetches]
            own = [i - w for i, w in zip(measured.inside, waited, strict=True)]
            cells += [f"{v:.2f}" for v in p50_p95_ms([f.end - f.start for f in measured.fetches])]
            cells += [f"{v:.2f}" for v in p50_p95_ms(waited)]
            own50, own95 = p50_p95_ms(own)
            cells += [f"{own50 - out50:.2f}", f"{own95 - out95:.2f}"]
            cells.append(f"{measured.met}/{len(measured.fetches)}")
        else:
            cells += ["-", "-", "-", "-", f"{in50 - out50:.2f}", f"{in95 - out95:.2f}", "-"]
        report.print([measured.name, *cells])
    c50, c95 = p50_p95_ms(context)
    print(
        f"\nPOST /context alone, no write in between (the interceptor's client, a new agent "
        "seeded alike): "
        f"p50 {c50:.2f} ms, p95 {c95:.2f} ms"
    )
    p50, p95 = p50_p95_ms(after_pause)
    print(
        f"POST /context alone, each after {SLOW_MODEL_SECONDS * 1000:.0f} ms idle: "
        f"p50 {p50:.2f} ms, p95 {p95:.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
