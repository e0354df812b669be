"""What the benchmark scripts share: our server as a process of its own (`agent-memory
serve` on a SQLite file, waited for, measured, stopped), a fake provider's process,
`--sizes`."""

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import httpx2

from api.store.dynamodb_local import free_port

__all__ = [
    "CORES",
    "GROUP",
    "PARENT",
    "ROOT",
    "ServerProcess",
    "free_port",
    "printing_process",
    "processes_where",
    "serve",
    "server_process",
    "sizes",
    "status_kib",
    "stop_group",
]

ROOT = Path(__file__).resolve().parent.parent
CORES = os.cpu_count() or 1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# The workers of one server would otherwise race to make the local key file (and one
# could read it empty): every server here gets this key instead.
ENCRYPTION_KEY = "bench-server-" + "k" * 40


@dataclass
class ServerProcess:
    """`agent-memory serve` in a process group of its own: its workers are in it too."""

    url: str
    process: "subprocess.Popen[bytes]"

    def pids(self) -> list[int]:
        return processes_where(GROUP, self.process.pid)

    def cpu_seconds(self) -> float:
        """User and system time of every process of the server so far."""
        ticks = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        return ticks / CLOCK_TICKS

    async def cpu_seconds_once_idle(
        self, quiet_seconds: float = 0.5, busy_share: float = 0.02, limit_seconds: float = 60.0
    ) -> float:
        """`cpu_seconds` once the server has gone quiet (under `busy_share` of a core for
        `quiet_seconds`): what requests left to do after their answers (vectors made in
        the background) is theirs too. Waits `limit_seconds` at most."""
        deadline = time.perf_counter() + limit_seconds
        last = self.cpu_seconds()
        while time.perf_counter() < deadline:
            await asyncio.sleep(quiet_seconds)
            now = self.cpu_seconds()
            if now - last < busy_share * quiet_seconds:
                return now
            last = now
        return last

    def memory_kib(self, field_name: str) -> int:
        """`VmRSS` (now) or `VmHWM` (peak) summed over the server's processes."""
        return sum(status_kib(pid, field_name) for pid in self.pids())


PARENT, GROUP = 1, 2  # fields of /proc/<pid>/stat after the command's name


def processes_where(field: int, value: int) -> list[int]:
    """The processes whose /proc stat `field` (PARENT or GROUP) is `value`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[field]) == value:
            found.append(int(entry.name))
    return found


def status_kib(pid: int, field_name: str) -> int:
    """A process's `VmRSS` or `VmHWM` in KiB; 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return 0


@contextmanager
def server_process(
    db: Path,
    args: Sequence[str] = (),
    *,
    poll_seconds: float = 0.05,
    start_seconds: float = 120,
    store: Mapping[str, str] | None = None,
) -> Iterator[ServerProcess]:
    """`agent-memory serve` (with `args`) on the SQLite file `db` in local mode, once its
    /health answers (asked every `poll_seconds`); stopped, workers and all, when the block
    ends. Its stderr is this process's. `store`: settings of another store (STORE=dynamodb,
    its endpoint and table) instead of the SQLite file."""
    port = free_port()
    env = {
        **os.environ,
        "STORE": "sqlite",
        "SQLITE_PATH": str(db),
        "ENCRYPTION_KEY": ENCRYPTION_KEY,
        "AUTH_MODE": "local",
        "LOG_LEVEL": "warning",
        **(store or {}),
    }
    process = subprocess.Popen(  # noqa: S603 (our own command)
        [sys.executable, "-m", "api.cli", "serve", "--port", str(port), *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    server = ServerProcess(f"http://127.0.0.1:{port}", process)
    try:
        deadline = time.monotonic() + start_seconds
        with httpx2.Client(timeout=1) as client:
            while True:
                try:
                    if client.get(server.url + "/health").status_code == 200:
                        break
                except httpx2.TransportError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the server did not start; see its log above")
                time.sleep(poll_seconds)
        yield server
    finally:
        stop_group(process)


@contextmanager
def serve(
    path: Path, args: Sequence[str] = (), start_seconds: float = 120
) -> Iterator[tuple[str, "subprocess.Popen[bytes]"]]:
    """`server_process`, as its base URL and the process."""
    with server_process(path, args, start_seconds=start_seconds) as server:
        yield server.url, server.process


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
