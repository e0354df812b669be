"""Export and import of one agent with many archival memories, on a SQLite file.

For each count (100k archival memories by default) an agent is made with that many
memories (written straight into the file with their vectors, as bench/search.py does).
Then, each step in a fresh process of its own, so that its peak memory is its own:

- export: `agent-memory export`'s code path, the file written to disk (vectors included);
- import: the file imported for another user (pass 1 checks it all, pass 2 writes every
  memory with its hash guard through the search engine's change log, vectors from the file);
- import again: the same file, everything skipped (idempotent).

Printed: items/s (archival memories per second, the whole step), the step's time, and its
peak memory above what the process held before the step began (RSS, and Python's own
allocations by tracemalloc when `--tracemalloc` is given, which slows the step). An import
or export that held the agent in memory would grow with the count; one that streams does not.

    uv run python bench/transfer.py [--counts 100000] [--tracemalloc]
    uv run python bench/transfer.py --counts 10000        # smaller, quicker
"""

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

from api.agents import service as agents
from api.agents.schemas import AgentCreate
from api.embeddings.factory import get_embedding_backend
from api.kit.clock import SystemClock
from api.repositories import Repositories
from api.runtime.architectures.registry import ARCHITECTURES
from api.search.engine import SearchEngine
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.transfer import service as transfer
from bench.report import Report
from bench.search import fill

TABLE = "agent-memory"
OWNER = "owner@example.com"
OTHER = "other@example.com"


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


class PeakRss:
    """The process's largest RSS while it runs, sampled every 10 ms on a thread."""

    def __init__(self) -> None:
        self.peak = rss_mib()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, rss_mib())

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return max(self.peak, rss_mib())


async def make(path: Path, count: int) -> str:
    table = SqliteTable(path, TABLE, load_definition(), clock=SystemClock())
    repos = Repositories.over(table)
    await table.create()
    try:
        agent, _ = await agents.create(
            repos, OWNER, AgentCreate(name="Bench"), SystemClock(), architectures=ARCHITECTURES
        )
    finally:
        await table.close()
    await fill(path, agent.agent_id, count)
    return agent.agent_id


async def step(kind: str, path: Path, file: Path, agent_id: str, traced: bool) -> dict[str, Any]:
    """One measured step, in this process: its time and peak memory above the start."""
    embedder = get_embedding_backend("static")
    table = SqliteTable(path, TABLE, load_definition(), clock=SystemClock())
    repos = Repositories.over(table)
    engine = SearchEngine(repos.search, embedder, SystemClock())
    base = rss_mib()
    sampler = PeakRss()
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    if kind == "export":
        agent = await agents.get(repos, OWNER, agent_id)
        with file.open("wb") as out:
            async for chunk in transfer.export_agent(repos, agent, SystemClock()):
                await asyncio.to_thread(out.write, chunk)
        written = 0
    else:
        (report,) = await transfer.import_file(repos, engine, OTHER, file)
        written = report.written["archival"]
    took = time.perf_counter() - start
    traced_peak = tracemalloc.get_traced_memory()[1] / 2**20 if traced else None
    peak = sampler.stop()
    await engine.aclose()
    await table.close()
    return {
        "seconds": took,
        "rss_growth_mib": peak - base,
        "traced_mib": traced_peak,
        "written": written,
    }


def run_step(kind: str, path: Path, file: Path, agent_id: str, traced: bool) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.transfer", "--step", kind, "--db", str(path)]
    command += ["--file", str(file), "--agent", agent_id] + (["--tracemalloc"] if traced else [])
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["file_mib"] = file.stat().st_size / 2**20
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="100000", help="archival memories, comma-separated")
    parser.add_argument("--tracemalloc", action="store_true", help="also trace Python's memory")
    parser.add_argument("--step", choices=["export", "import", "again"], help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--agent", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        kind = "import" if args.step == "again" else args.step
        result = asyncio.run(step(kind, args.db, args.file, args.agent, args.tracemalloc))
        print(json.dumps(result))
        return 0

    columns = ["step", "memories", "items/s", "seconds", "file MiB", "peak RSS +MiB"]
    widths = [13, 9, 9, 8, 9, 14]
    if args.tracemalloc:
        columns.append("traced MiB")
        widths.append(11)
    report = Report(columns, widths)
    for count in (int(c) for c in args.counts.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            path, file = Path(tmp) / "bench.db", Path(tmp) / "agent.jsonl"
            agent_id = asyncio.run(make(path, count))
            for kind in ("export", "import", "again"):
                r = run_step(kind, path, file, agent_id, args.tracemalloc)
                if kind == "import" and r["written"] != count:
                    raise RuntimeError(f"imported {r['written']} of {count} memories")
                cells = [
                    {"again": "import again"}.get(kind, kind),
                    str(count),
                    f"{count / r['seconds']:,.0f}",
                    f"{r['seconds']:.1f}",
                    f"{r['file_mib']:.1f}",
                    f"{r['rss_growth_mib']:.1f}",
                ]
                if args.tracemalloc:
                    cells.append(f"{r['traced_mib']:.1f}")
                report.print(cells)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
