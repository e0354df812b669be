"""bench/load.py's smallest configuration, end to end: a real server process, the fake
model in its own process, every scenario run and its row printed. No timing is asserted."""

import re

import pytest

from bench import load
from bench.load import added_seconds


def test_the_smallest_load_run_prints_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--workers", "1", "--sequential", "2", "--concurrency", "2", "--open", "2"]
    argv += ["--open-seconds", "1", "--chunks", "3", "--turn-seconds", "0.1"]
    assert load.main(argv) == 0  # every turn completed
    cells = [
        re.split(r"\s{2,}", line.strip())
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("1  ")
    ]
    rows = {row[1]: row[2:] for row in cells}  # by scenario, from the turns completed on
    assert list(rows) == ["sequential", "concurrent 2", "open 2"]
    assert all(row[:2] == ["2", "0"] for row in rows.values())  # completed, failed
    assert rows["open 2"][-1] != "-"  # memory per open stream was measured


def test_the_added_time_counts_from_the_due_start_so_a_late_client_counts() -> None:
    # Due at 10.000 s, sent 30 ms late, first text at 10.050 s, 10 ms of it the model's.
    assert added_seconds(due=10.0, first_text=10.05, model_seconds=0.01) == pytest.approx(0.04)
