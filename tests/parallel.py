"""What the processes of one test run must not collide on when pytest-xdist runs the suite
on several (`./dev test`: one worker per core): the ports of servers started in processes of
their own, and the installs and builds written into the checkout."""

import fcntl
import os
import random
import socket
from collections.abc import Iterator
from contextlib import contextmanager

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
