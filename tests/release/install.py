"""Fresh installs outside the checkout, as a user makes them: a venv of the machine's Python
(`uv venv`, never a downloaded Python), `uv pip install` of a distribution (uv's cache
reused), and the installed `agent-memory serve` started in a directory of its own with an
environment that names nothing of the checkout."""

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

CHECKOUT = Path(__file__).resolve().parents[2]


def uv() -> str:
    """The uv that runs this test (`uv run` names itself in UV), else the one on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    assert found, "uv is needed"
    return found


def machine_python() -> str:
    """The Python the checkout's venv was made from (not the venv's own)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(Path(sys.base_prefix) / "bin" / version)


def outside_env(**settings: str) -> dict[str, str]:
    """This process's environment less what points into the checkout or its venv."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT")
        and not key.startswith(("PYTEST_", "COV_"))
    }
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and not p.startswith(str(CHECKOUT))
    )
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return {**env, **settings}


def run(command: Sequence[str | Path], *, cwd: Path, env: Mapping[str, str]) -> float:
    """The command, which must succeed; its seconds."""
    started = time.monotonic()
    done = subprocess.run(
        [str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return time.monotonic() - started


def make_venv(venv: Path, env: Mapping[str, str]) -> None:
    run([uv(), "venv", "--quiet", "--python", machine_python(), venv], cwd=venv.parent, env=env)


def pip_install(venv: Path, *requirements: str | Path, env: Mapping[str, str]) -> float:
    """`uv pip install` into the venv; its seconds."""
    command: list[str | Path] = [
        uv(),
        "pip",
        "install",
        "--quiet",
        "--python",
        venv / "bin" / "python",
    ]
    return run([*command, *requirements], cwd=venv.parent, env=env)


@dataclass(frozen=True)
class Dists:
    server_wheel: Path
    server_sdist: Path
    client_wheel: Path
    client_sdist: Path


@dataclass(frozen=True)
class Served:
    root: str
    start_seconds: float  # from the command's start to /health's first 200


@contextmanager
def serving(
    command: Sequence[str | Path],
    *,
    port: int,
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    start_seconds: float = 120,
) -> Iterator[Served]:
    """The command, which must serve on 127.0.0.1:port; once /health answers 200. Stopped
    (SIGTERM, then its process group killed) when the block ends."""
    root = f"http://127.0.0.1:{port}"
    with log.open("w") as output:
        started = time.monotonic()
        process = subprocess.Popen(
            [str(c) for c in command],
            cwd=cwd,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        while True:
            try:
                if httpx2.get(f"{root}/health", timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            said = log.read_text(errors="replace")[-3000:]
            assert process.poll() is None, f"{command} exited\n{said}"
            assert time.monotonic() - started < start_seconds, f"{command} never answered\n{said}"
            time.sleep(0.05)
        yield Served(root, time.monotonic() - started)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait(timeout=10)


# Off unless the release check runs them (.ci/release-check): they build, install and start
# servers for minutes, one at a time.
RELEASE_CHECK = os.environ.get("RELEASE_CHECK") == "1"
needs_release_check = pytest.mark.skipif(
    not RELEASE_CHECK, reason="the release check's: .ci/release-check (RELEASE_CHECK=1)"
)
REPORT: list[str] = []  # lines for the end of the run (conftest.py prints them)
