"""bench/client.py (what learning() adds to a model call) run as a user runs it, a script
whose folder would shadow the `client` package: every row printed, each call inside the
context having fetched its memory. No timing is asserted."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROWS = [
    "create, memory + capture",
    "create, capture_only",
    "create stream=True, to the end",
    "AsyncOpenAI create, memory",
    "50 ms model: create, memory",
    "50 ms model: capture_only",
]


def test_the_client_benchmark_runs_as_a_script_and_prints_every_row() -> None:
    done = subprocess.run(
        [sys.executable, "bench/client.py", "--n", "3", "--warmup", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    cells = {
        row[0]: row[1:]
        for row in (re.split(r"\s{2,}", line.strip()) for line in done.stdout.splitlines())
        if row[0] in ROWS
    }
    assert list(cells) == ROWS
    for name in ROWS:
        float(cells[name][2])  # the added time at p50, a number
        fetches = cells[name][-1]  # "met a capture": of how many fetches
        assert fetches == "-" if "capture_only" in name else fetches.endswith("/3"), name
    assert "POST /context alone" in done.stdout
