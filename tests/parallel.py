"""What the processes of one test run must not collide on when pytest-xdist runs the suite
on several (`./dev test`: one worker per core): the ports of servers started in processes of
their own, and the installs and builds written into the checkout."""

import fcntl
import json
import os
import random
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

# Below Linux's ephemeral range (32768-60999), which a bind to port 0 and every outgoing
# connection draw from: a port here is one that only free_port hands out.
PORTS = range(20000, 32000)
_turn: int | None = None


def free_port() -> int:
    """A port of 127.0.0.1 that nothing listens on, for a server about to start in another
    process. Picked by the kernel, the same port could go to another worker in the second
    or so before the server binds it, and the test would talk to that worker's server; so
    each worker takes ports in turn from a slice of PORTS of its own."""
    global _turn
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    size = len(PORTS) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if _turn is None:
        _turn = random.randrange(size)  # another run of the suite on this machine: elsewhere
    for _ in range(size):
        port = PORTS.start + worker * size + _turn % size
        _turn += 1
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use
            return port
    raise RuntimeError(f"no free port among this worker's {size}")


@contextmanager
def one_at_a_time(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[None]:
    """The block run by one worker of the run at a time (say, an install the others then
    find done): a lock file beside the workers' temporary directories."""
    path = tmp_path_factory.getbasetemp().parent / f"{name}.lock"
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass
class SharedServer:
    """What the workers of a run that share one server know of it."""

    pid: int
    endpoint: str
    users: int


@contextmanager
def shared_by_workers(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    start: Callable[[Path], tuple[int, str]],
    stop: Callable[[int], None],
) -> Iterator[str]:
    """A server for the whole run, its endpoint: the first worker to need it starts it
    (`start(workdir)`: its pid and endpoint), each worker using it counts itself in, and the
    last to finish stops it (`stop(pid)`). One process without pytest-xdist: its own."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        pid, endpoint = start(tmp_path_factory.mktemp(name))
        try:
            yield endpoint
        finally:
            stop(pid)
        return
    state = shared_state(tmp_path_factory.getbasetemp().parent, name)
    with one_at_a_time(tmp_path_factory, name):
        found = SharedServer(**json.loads(state.read_text())) if state.exists() else None
        if found is None or not _alive(found.pid):
            pid, endpoint = start(state.with_suffix(""))
            found = SharedServer(pid, endpoint, 0)
        found.users += 1
        state.write_text(json.dumps(asdict(found)))
    try:
        yield found.endpoint
    finally:
        with one_at_a_time(tmp_path_factory, name):
            now = SharedServer(**json.loads(state.read_text()))
            now.users -= 1
            if now.users == 0:
                stop(now.pid)
                state.unlink()
            else:
                state.write_text(json.dumps(asdict(now)))


def shared_state(root: Path, name: str) -> Path:
    """Where the run rooted at `root` (the workers' temporary directories' parent) keeps
    what its workers know of the server `name`."""
    return root / f"{name}.json"


def stop_left_over(root: Path, name: str) -> None:
    """The server `name` of the run rooted at `root`, stopped if a worker that used it died
    before it could say so (the run's controller calls this once every worker ended)."""
    state = shared_state(root, name)
    if state.exists():
        terminate(SharedServer(**json.loads(state.read_text())).pid)
        state.unlink()


def terminate(pid: int) -> None:
    """SIGTERM, as Popen.terminate sends; a process already gone is fine."""
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
