"""Archival search and insert through HTTP, against a real server process, on SQLite.

For each size (1k, 10k, 100k memories in one agent by default) a server runs as its own
process (`agent-memory serve`, with `--backend`, `static` by default) on a fresh SQLite file. The
agent is created through the API; its memories are then written straight into the file
(made as the API makes them: the same items, embedded by the same model), since 100k
inserts through HTTP would take minutes and are measured on their own below. Then:

- the first search, which loads the agent's index: the resident memory (VmRSS) of the
  worker process that answered it (`serve` starts one per core; the one that grew) is read
  from /proc before and after, so the table shows the idle worker, what the index holds,
  and that per memory beyond its text (the Python string's size);
- N searches for a top 10 (the default page is 5: `limit=10`), each a different query of
  a few words, in hybrid (the default) and lexical mode: p50 and p95;
- inserts through `POST /agents/{id}/memory/archival`, one after another: p50, p95 and
  throughput; then with 8 clients at once: throughput.

    uv run python bench/search.py [--sizes 1000,10000,100000] [--n 300] [--inserts 300]
        [--backend static] [--words common|rare]

`--words rare`: texts of made-up words, each in a handful of memories (names, codes, words
of another language), so a query matches few memories by its words and most only by their
vectors: most fused scores tie, the case a page's selection must not slow down on.

Targets on this machine (`static`): hybrid search p50 <= 3 ms at 10k and <= 12 ms at 100k;
insert p50 <= 3 ms; at most 2 KB of resident memory per memory beyond its text.
"""

import argparse
import asyncio
import hashlib
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2

from api.embeddings.factory import get_embedding_backend
from api.kit.clock import SystemClock
from api.memory import repository
from api.memory.models import ArchivalMemory
from api.search import vectors
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from bench.common import PARENT, processes_where, serve, sizes, status_kib
from bench.report import Report, p50_p95_ms

_VOCABULARY = (
    "coffee tea garden dog cat bike train meeting report budget doctor dentist flight hotel "
    "beach mountain recipe pasta pizza salad running swimming yoga guitar piano novel movie "
    "sister brother mother father friend neighbour office client project deadline invoice "
    "birthday wedding holiday weekend morning evening winter summer spring autumn rain snow "
    "car insurance rent apartment kitchen window plant book museum concert football tennis"
)
WORDS = _VOCABULARY.split()
TEMPLATES = [
    "Remember that the {0} and the {1} matter for the {2} next week.",
    "Talked about {0} with my {1}; we plan a {2} in the {3}.",
    "The {0} was late again, so the {1} moved to the {2}.",
    "Bought a new {0} for the {1}, it cost more than the {2}.",
    "Note to self: {0}, {1} and {2} before the {3}.",
]


MODES = ("hybrid", "lexical", "semantic")


_SYLLABLE_TEXT = (
    "ka lo mi zu ve tra po ny gre sil dor fen qua rix bel yo tam sep ur och "
    "bru dea fli gon hep jol kru mav nid pex"
)
_SYLLABLES = _SYLLABLE_TEXT.split()


def made_up_words(count: int, seed: int = 5) -> list[str]:
    """`count` distinct words of three to four syllables that no language has."""
    rng = random.Random(seed)
    found: dict[str, None] = {}
    while len(found) < count:
        found["".join(rng.choices(_SYLLABLES, k=rng.randint(3, 4)))] = None
    return list(found)


def texts(count: int, seed: int = 7, words: str = "common") -> list[str]:
    rng = random.Random(seed)
    if words == "rare":  # about four memories per word
        vocabulary = made_up_words(max(count * 2, 100))
        return [" ".join(rng.sample(vocabulary, 8)) for _ in range(count)]
    return [rng.choice(TEMPLATES).format(*rng.sample(WORDS, 4)) + f" (#{i})" for i in range(count)]


def queries(count: int, seed: int = 11, words: str = "common", size: int = 0) -> list[str]:
    rng = random.Random(seed)
    if words == "rare":  # words the memories hold
        vocabulary = made_up_words(max(size * 2, 100))
        return [" ".join(rng.sample(vocabulary, rng.randint(1, 3))) for _ in range(count)]
    return [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(count)]


def rss_mib(pid: int) -> float:
    return status_kib(pid, "VmRSS") / 1024


def worker_rss(server: int) -> dict[int, float]:
    """Resident MiB of each process that may answer requests: the server's children, or the
    server itself when it runs without workers (`--workers 1`)."""
    return {pid: rss_mib(pid) for pid in processes_where(PARENT, server) or [server]}


async def fill(
    path: Path, agent_id: str, count: int, backend: str = "static", words: str = "common"
) -> None:
    """`count` memories, as archival.insert writes them (the same items and vectors)."""
    embedder = get_embedding_backend(backend)
    assert embedder is not None
    table = SqliteTable(path, "agent-memory", load_definition(), clock=SystemClock())
    start = datetime(2024, 1, 1, tzinfo=UTC)
    try:
        written = texts(count, words=words)
        for at in range(0, count, 5000):
            chunk = written[at : at + 5000]
            items = []
            for i, (text, vector) in enumerate(zip(chunk, embedder.embed(chunk), strict=True)):
                created = start + timedelta(seconds=at + i)
                memory = ArchivalMemory(
                    agent_id=agent_id,
                    memory_id=repository.new_memory_id(created),
                    content=text,
                    content_hash=hashlib.sha256(text.encode()).hexdigest(),
                    created_at=created,
                )
                vector_attributes = vectors.attributes(vector, embedder.model_id)
                items.append({**memory.to_dynamo_item(), **vector_attributes})
            await table.batch_write(puts=items)
    finally:
        await table.close()


def timed(client: httpx2.Client, method: str, url: str, **kwargs: object) -> float:
    start = time.perf_counter()
    response = client.request(method, url, timeout=600, **kwargs)  # type: ignore[arg-type]
    took = time.perf_counter() - start
    if response.status_code >= 300:
        raise RuntimeError(f"{method} {url}: {response.status_code} {response.text}")
    return took


def measure(size: int, n: int, inserts: int, report: Report, *, backend: str, words: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        with serve(path, start_seconds=30) as (url, process), httpx2.Client(base_url=url) as client:
            agent = client.post("/agents", json={"name": "Bench"}).json()["id"]
            asyncio.run(fill(path, agent, size, backend, words))
            search = f"/agents/{agent}/memory/archival/search"
            timed(client, "GET", "/health")
            before = worker_rss(process.pid)
            first = queries(1, seed=3, words=words, size=size)[0]
            load = timed(client, "GET", search, params={"query": first, "limit": 10})
            after = worker_rss(process.pid)
            # The worker that loaded the index is the one that grew.
            worker = max(after, key=lambda pid: after[pid] - before.get(pid, after[pid]))
            idle, grown = before[worker], after[worker] - before[worker]
            text_bytes = sum(sys.getsizeof(t) for t in texts(size, words=words))
            per_doc = (grown * 1024 * 1024 - text_bytes) / size
            rows = []
            for mode in MODES:
                took = [
                    timed(client, "GET", search, params={"query": q, "limit": 10, "mode": mode})
                    for q in queries(n, words=words, size=size)
                ]
                rows.append((mode, *p50_p95_ms(took)))
            add = f"/agents/{agent}/memory/archival"
            began = time.perf_counter()
            one_by_one = [
                timed(client, "POST", add, json={"content": f"Inserted note {i} about tea"})
                for i in range(inserts)
            ]
            sequential_rate = inserts / (time.perf_counter() - began)
            concurrent_rate = asyncio.run(insert_together(url, add, inserts))
            i50, i95 = p50_p95_ms(one_by_one)
        for mode, p50, p95 in rows:
            report.print(
                [
                    f"{size:,}",
                    mode,
                    f"{p50:.2f}",
                    f"{p95:.2f}",
                    f"{load * 1000:.0f}",
                    f"{idle:.0f}",
                    f"{grown:.0f}",
                    f"{per_doc:.0f}",
                    f"{i50:.2f}",
                    f"{i95:.2f}",
                    f"{sequential_rate:.0f}",
                    f"{concurrent_rate:.0f}",
                ]
            )


async def insert_together(url: str, path: str, count: int, clients: int = 8) -> float:
    async with httpx2.AsyncClient(base_url=url) as client:

        async def worker(k: int) -> None:
            for i in range(k, count, clients):
                response = await client.post(path, json={"content": f"Parallel note {i} on rain"})
                response.raise_for_status()

        began = time.perf_counter()
        await asyncio.gather(*(worker(k) for k in range(clients)))
        return count / (time.perf_counter() - began)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", type=sizes, default=[1_000, 10_000, 100_000])
    parser.add_argument("--n", type=int, default=300, help="searches per mode")
    parser.add_argument("--inserts", type=int, default=300)
    parser.add_argument("--backend", default="static", help="MEMORY_EMBEDDING_BACKEND")
    parser.add_argument(
        "--words", choices=["common", "rare"], default="common", help="what the texts are made of"
    )
    args = parser.parse_args()
    os.environ["MEMORY_EMBEDDING_BACKEND"] = args.backend  # the servers' too
    report = Report(
        [
            "memories",
            "mode",
            "search p50",
            "p95 ms",
            "load ms",
            "idle MiB",
            "index MiB",
            "B/doc",
            "insert p50",
            "p95 ms",
            "ins/s 1",
            "ins/s 8",
        ],
        [9, 7, 10, 7, 8, 8, 9, 6, 10, 7, 7, 7],
        text=2,
    )
    for size in args.sizes:
        measure(size, args.n, args.inserts, report, backend=args.backend, words=args.words)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
