"""How many workers `serve` starts by default: the cores this process may use, a CPU
quota (a container's --cpus) counted."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from api.kit.cores import cpu_quota, usable_cores
from api.store.dynamodb_local import free_port


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
        ("", 4),
    ],
)
def test_a_quota_caps_the_cores_of_the_affinity(tmp_path: Path, written: str, cores: int) -> None:
    assert usable_cores(cpu_max(tmp_path, written)) == cores


@pytest.mark.usefixtures("four_cores")
def test_no_quota_file_leaves_the_affinity(tmp_path: Path) -> None:
    assert cpu_quota(tmp_path / "absent") is None
    assert usable_cores(tmp_path / "absent") == 4


def test_serve_starts_a_worker_per_usable_core_by_default(tmp_path: Path) -> None:
    """Pinned to one core (taskset's way), `serve` with no --workers starts one worker."""
    port = free_port()
    env = {**os.environ, "STORE": "sqlite", "SQLITE_PATH": str(tmp_path / "serve.db")}
    process = subprocess.Popen(
        [sys.executable, "-m", "api.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}),
    )
    try:
        assert process.stdout is not None
        assert "1 worker(s)" in process.stdout.readline()
    finally:
        process.terminate()
        process.wait(timeout=10)
