"""Cold start: how soon `agent-memory serve` answers /health, and what each of its processes
holds in memory while idle.

Each run starts the server as a user does (`python -m api.cli serve --port P --workers N`,
local mode, a SQLite file in a fresh temporary directory, the default `static` embedding
backend) and asks GET /health every 5 ms from the moment the process is started; after the
first 200, it waits `--idle` seconds and reads each process's resident memory (`VmRSS`).
With more than one worker the command's own process supervises the workers and serves
nothing: its memory is shown apart.

    uv run --frozen python bench/start.py [--runs 5] [--workers 1,2] [--idle 2]

The modules' bytecode is what `./dev serve` and the container image compile ahead; this
script compiles `api/` first too (where PYTHONDONTWRITEBYTECODE is set, Python would
otherwise compile every module at each start: about 1.2 s more here).

Targets (issue 15): /health within 0.7 s of the start; at most 100 MiB idle per worker.
"""

import argparse
import compileall
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import CORES, ROOT, server_process, status_kib
from bench.report import Report

POLL_SECONDS = 0.005


def one_start(workers: int, idle_seconds: float) -> tuple[float, list[float], float | None]:
    """Seconds to the first /health 200; then, idle, each worker's MiB and the
    supervisor's (None with one worker: it is the worker)."""
    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        started = time.perf_counter()
        command = ["--workers", str(workers)]
        with server_process(Path(tmp) / "start.db", command, poll_seconds=POLL_SECONDS) as server:
            ready = time.perf_counter() - started
            time.sleep(idle_seconds)
            resident = {pid: status_kib(pid, "VmRSS") / 1024 for pid in server.pids()}
    supervisor_pid = server.process.pid
    if workers == 1:
        return ready, [resident[supervisor_pid]], None
    supervisor = resident.pop(supervisor_pid)
    # The supervisor's helper (multiprocessing's resource tracker) holds a few MiB.
    return ready, sorted(resident.values(), reverse=True)[:workers], supervisor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5, help="starts per worker count")
    parser.add_argument("--workers", default=f"1,{CORES}", help="worker counts, comma-separated")
    parser.add_argument("--idle", type=float, default=2.0, help="seconds idle before memory")
    args = parser.parse_args(argv)
    compileall.compile_dir(ROOT / "api", quiet=1)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{args.runs} starts per row; {CORES} cores, load average {load}\n")
    report = Report(
        ("workers", "/health p50 s", "min", "max", "worker MiB p50", "max", "supervisor MiB"),
        (7, 13, 5, 5, 14, 5, 14),
    )
    for workers in sorted({int(w) for w in args.workers.split(",")}):
        ready, workers_mib, supervisor = [], [], []
        for _ in range(args.runs):
            seconds, each, watcher = one_start(workers, args.idle)
            ready.append(seconds)
            workers_mib += each
            if watcher is not None:
                supervisor.append(watcher)
        report.print(
            (
                str(workers),
                f"{statistics.median(ready):.2f}",
                f"{min(ready):.2f}",
                f"{max(ready):.2f}",
                f"{statistics.median(workers_mib):.0f}",
                f"{max(workers_mib):.0f}",
                f"{statistics.median(supervisor):.0f}" if supervisor else "-",
            )
        )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nload average after: {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
