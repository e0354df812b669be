"""bench/load.py's smallest configurations, end to end: a real server process, the fake
model in its own process, every scenario (or every rate of the open loop) run and its row
printed. No timing is asserted; the open loop's schedule and clock are checked on their
own, without a server."""

import re

import pytest

from bench import load
from bench.load import AtRate, Turn, added_seconds, held_rate, poisson_schedule


def rows_of(out: str, first: str) -> list[list[str]]:
    return [
        re.split(r"\s{2,}", line.strip()) for line in out.splitlines() if line.startswith(first)
    ]


def test_the_smallest_load_run_prints_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--workers", "1", "--sequential", "2", "--concurrency", "2", "--open", "2"]
    argv += ["--open-seconds", "1", "--chunks", "3", "--turn-seconds", "0.1"]
    assert load.main(argv) == 0  # every turn completed
    rows = {row[1]: row[2:] for row in rows_of(capsys.readouterr().out, "1  ")}
    assert list(rows) == ["sequential", "concurrent 2", "open 2"]
    assert all(row[:2] == ["2", "0"] for row in rows.values())  # completed, failed
    assert rows["open 2"][-1] != "-"  # memory per open stream was measured


def test_the_smallest_open_loop_prints_every_rate(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--open-loop", "--workers", "1", "--rates", "10,5", "--rate-seconds", "1"]
    argv += ["--chunks", "3", "--turn-seconds", "0.1"]
    assert load.main(argv) == 0
    out = capsys.readouterr().out
    rows = {row[1]: row[2:] for row in rows_of(out, "1  ")}
    assert list(rows) == ["5", "10"]  # the rates, lowest first
    for rate, row in rows.items():
        turns = str(len(poisson_schedule(float(rate), 1.0, 7)))  # the default seed's
        assert row[:3] == [turns, turns, "0"]  # turns, completed, failed
    assert "1 worker(s): highest rate held" in out


def test_a_seed_gives_the_same_poisson_schedule_at_the_rate_asked() -> None:
    due = poisson_schedule(50.0, 200.0, seed=3)
    assert due == poisson_schedule(50.0, 200.0, seed=3)
    assert due != poisson_schedule(50.0, 200.0, seed=4)
    assert due == sorted(due)
    assert due[0] > 0
    assert due[-1] < 200.0
    # 10,000 arrivals expected, a standard deviation of 100.
    assert abs(len(due) - 10_000) < 400
    gaps = [b - a for a, b in zip([0.0, *due], due, strict=False)]
    assert sum(gaps) / len(gaps) == pytest.approx(1 / 50, rel=0.04)
    # Exponential gaps: their standard deviation is their mean (a fixed period's is 0).
    mean = sum(gaps) / len(gaps)
    spread = (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5
    assert spread == pytest.approx(mean, rel=0.05)


def test_the_added_time_counts_from_the_due_start_so_a_late_client_counts() -> None:
    # Due at 10.000 s, sent 30 ms late, first text at 10.050 s, 10 ms of it the model's.
    assert added_seconds(due=10.0, first_text=10.05, model_seconds=0.01) == pytest.approx(0.04)


def at(rate: float, added_ms: float, failed: int = 0) -> AtRate:
    turns = [Turn(completed=True, added=added_ms / 1000) for _ in range(20)]
    turns += [Turn(problem="503") for _ in range(failed)]
    return AtRate(rate, turns, seconds=1.0, cpu_seconds=0.1, client_cpu_seconds=0.01, load=0.0)


def test_the_rate_held_is_the_highest_with_every_lower_rate_held() -> None:
    assert held_rate([at(50, 20), at(20, 10), at(80, 49)]) == 80
    assert held_rate([at(20, 10), at(50, 51), at(80, 20)]) == 20  # 80 held by luck alone
    assert held_rate([at(20, 10), at(50, 20, failed=1)]) == 20
    assert held_rate([at(20, 60)]) is None
