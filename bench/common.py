"""What the benchmark scripts share: our server as a process of its own (`agent-memory
serve` on a SQLite file, waited for, stopped), a fake provider's process, `--sizes`."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx2

from api.store.dynamodb_local import free_port

__all__ = ["free_port", "printing_process", "serve", "sizes", "stop_group"]


@contextmanager
def serve(
    path: Path, args: Sequence[str] = (), start_seconds: float = 120
) -> Iterator[tuple[str, "subprocess.Popen[bytes]"]]:
    """`agent-memory serve` (with `args`) on the SQLite file `path`, once it answers
    /health: its base URL and the process. Its stderr goes to `path` + `.log`, quoted when
    it does not start."""
    port = free_port()
    env = {**os.environ, "STORE": "sqlite", "SQLITE_PATH": str(path), "LOG_LEVEL": "warning"}
    log = path.with_name(path.name + ".log")
    command = [sys.executable, "-m", "api.cli", "serve", "--port", str(port), *args]
    with log.open("wb") as stderr:
        process = subprocess.Popen(  # noqa: S603 (our own command)
            command, env=env, stdout=subprocess.DEVNULL, stderr=stderr
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_seconds
        while True:
            try:
                if httpx2.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                said = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the server did not start:\n{said}")
            time.sleep(0.05)
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def printing_process(command: Sequence[str], cwd: Path, what: str) -> Iterator[str]:
    """A process (a fake provider, say) that prints its base URL on its first line, then
    serves until killed; that URL."""
    process = subprocess.Popen(  # noqa: S603 (our own command)
        command, stdout=subprocess.PIPE, text=True, cwd=cwd
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        if not base_url:
            raise RuntimeError(f"{what} did not start")
        yield base_url
    finally:
        process.kill()
        process.wait()


def sizes(text: str) -> Sequence[int]:
    """`--sizes 1000,10000`."""
    return [int(part) for part in text.split(",")]


def stop_group(process: "subprocess.Popen[bytes]") -> None:
    """A server started in a process group of its own, workers and all: asked to stop,
    then killed if it will not."""
    with suppress(ProcessLookupError):  # it may have exited already
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
