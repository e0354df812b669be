"""Seed 004's memory layer through HTTP, against a real server process, on SQLite.

For each size (1k and 10k archival memories in one subject by default) a server runs as its
own process (`agent-memory serve`, the static embedder, the offline model for memory runs)
on a fresh SQLite file. The subject is made through `POST /memory/initialize`; its memories
are then written straight into the file, as bench/search.py does. Then:

- `GET /memory/context` with a query (the seed's default of 3 relevant memories), each a
  different query of a few words, after one that loads the subject's index: p50 and p95;
- `POST /memory/add` of 4 messages with `wait_for_completion: false`, one after another
  (every message stored in the subject's session and in archival memory, embedded, and a
  memory run queued, before the answer; the runs are worked meanwhile): p50 and p95.

    uv run python bench/memory_layer.py [--sizes 1000,10000] [--n 300] [--adds 300]

Targets on this machine: add p50 <= 10 ms; context p50 <= 5 ms at 10k memories.
"""

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import httpx2

from bench.common import serve, sizes
from bench.report import Report, p50_p95_ms
from bench.search import fill, queries, timed

SUBJECT = "bench_user"


def conversation(i: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"My name is Sam and I like tea with lemon (#{i})."},
        {"role": "assistant", "content": f"Noted, Sam: tea with lemon (#{i})."},
        {"role": "user", "content": f"The main goal is to finish report {i} by Friday."},
        {"role": "assistant", "content": f"Report {i} by Friday it is."},
    ]


def until_idle(client: httpx2.Client, seconds: float = 120) -> None:
    """Until the subject's memory runs have all ended."""
    deadline = time.monotonic() + seconds
    while client.get("/memory/context", params={"user_id": SUBJECT}).json()["pending_runs"]:
        if time.monotonic() > deadline:
            raise RuntimeError("the memory runs never ended")
        time.sleep(0.1)


def measure(size: int, n: int, adds: int, report: Report) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        with serve(path, ["--workers", "1"]) as (url, _), httpx2.Client(base_url=url) as client:
            made = client.post("/memory/initialize", json={"user_id": SUBJECT})
            agent_id = made.json()["agent_id"]
            asyncio.run(fill(path, agent_id, size))
            params = {"user_id": SUBJECT, "query": "coffee"}
            load = timed(client, "GET", "/memory/context", params=params)
            contexts = [
                timed(client, "GET", "/memory/context", params={"user_id": SUBJECT, "query": q})
                for q in queries(n)
            ]
            added = [
                timed(
                    client,
                    "POST",
                    "/memory/add",
                    json={
                        "user_id": SUBJECT,
                        "messages": conversation(i),
                        "wait_for_completion": False,
                    },
                )
                for i in range(adds)
            ]
            began = time.perf_counter()
            until_idle(client)
            drained = time.perf_counter() - began
        c50, c95 = p50_p95_ms(contexts)
        a50, a95 = p50_p95_ms(added)
        report.print(
            [
                f"{size:,}",
                f"{c50:.2f}",
                f"{c95:.2f}",
                f"{load * 1000:.0f}",
                f"{a50:.2f}",
                f"{a95:.2f}",
                f"{drained:.1f}",
            ]
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", type=sizes, default=[1_000, 10_000])
    parser.add_argument("--n", type=int, default=300, help="context requests per size")
    parser.add_argument("--adds", type=int, default=300, help="adds of 4 messages per size")
    args = parser.parse_args()
    report = Report(
        [
            "memories",
            "context p50",
            "p95 ms",
            "first ms",
            "add p50",
            "p95 ms",
            "runs left s",
        ],
        [9, 11, 7, 8, 8, 7, 11],
    )
    for size in args.sizes:
        measure(size, args.n, args.adds, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
