"""How many workers `serve` starts by default: the cores this process may use, a CPU
quota (a container's --cpus) counted (`serve` itself: tests/app/test_cli.py)."""

import os
from pathlib import Path

import pytest

from api.kit.cores import cpu_quota, usable_cores


@pytest.fixture
def four_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3})


def cpu_max(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cpu.max"
    path.write_text(text)
    return path


@pytest.mark.usefixtures("four_cores")
@pytest.mark.parametrize(
    ("written", "cores"),
    [
        ("max 100000\n", 4),  # no quota: the affinity's cores
        ("150000 100000\n", 2),  # a core and a half: two workers, the half one shared
        ("100000 100000\n", 1),
        ("20000 100000\n", 1),  # a fifth of a core: still one worker
        ("800000 100000\n", 4),  # more than the affinity allows: the affinity
        ("not a quota\n", 4),
        ("100000 0\n", 4),  # a period of 0: no quota to read
        ("", 4),
    ],
)
def test_a_quota_caps_the_cores_of_the_affinity(tmp_path: Path, written: str, cores: int) -> None:
    assert usable_cores(cpu_max(tmp_path, written)) == cores


@pytest.mark.usefixtures("four_cores")
def test_no_quota_file_leaves_the_affinity(tmp_path: Path) -> None:
    assert cpu_quota(tmp_path / "absent") is None
    assert usable_cores(tmp_path / "absent") == 4
