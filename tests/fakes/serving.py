"""Servers for a block of a test, on a free port of 127.0.0.1: a fake outside service in a
thread (`serve_in_thread`), or our own server as a user runs it, in a process of its own
(`server_process`); each waited for until it answers, and stopped when the block ends."""

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import httpx2
import uvicorn
from starlette.types import ASGIApp

from tests.parallel import free_port

T = TypeVar("T")
# One client for the tests' own requests to servers on 127.0.0.1 (a server starting up,
# a fake's page): a client each made a TLS context each, 50 ms of CPU, many times per
# test. It keeps no connection (the next server on a port may be another) and leaves out
# the machine's proxies (a test may set them; these servers are never behind one).
LOCAL = httpx2.Client(trust_env=False, limits=httpx2.Limits(max_keepalive_connections=0))


class _ThreadServer(uvicorn.Server):
    """uvicorn's server, stopped at once. Its own main loop looks at `should_exit` every
    0.1 s and its shutdown sleeps 0.1 s before it waits for connections, also by 0.1 s
    steps: 0.2 s for each fake of each test, idle time of a core. A fake has no clients to
    be gentle with: this one wakes when told to stop and polls its connections closely."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._stop = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    def stop(self) -> None:
        self.should_exit = True  # before reading the loop: see main_loop
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self.on_tick(0)  # the Date header
        if not self.should_exit:  # stop() before the loop was known cannot have woken it
            await self._stop.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()  # an idle one closes now, a busy one after its answer
        deadline = time.monotonic() + (self.config.timeout_graceful_shutdown or 0)
        state = self.server_state
        # uvicorn tells of no closed connection or ended task: looked at closely instead.
        while (state.connections or state.tasks) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        for task in state.tasks:
            task.cancel()
        for server in self.servers:
            await server.wait_closed()
        await self.lifespan.shutdown()


@contextmanager
def serve_in_thread(
    name: str,
    build: Callable[[str], tuple[T, ASGIApp]],
    probe_path: str,
    *,
    probe_headers: dict[str, str] | None = None,
    before_stop: Callable[[T], None] | None = None,
    lifespan: Literal["on", "off"] = "off",
) -> Iterator[T]:
    """`build` gets the server's root URL and returns the fake's handle and its app; the
    block starts once `probe_path` answers 200 over HTTP."""
    # The socket is bound here rather than by uvicorn so that the port, and with it every
    # URL the fake hands out, is known before the app is built.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    root = f"http://127.0.0.1:{sock.getsockname()[1]}"
    fake, app = build(root)
    config = uvicorn.Config(
        app,
        lifespan=lifespan,
        access_log=False,
        log_config=None,  # keeps uvicorn from reconfiguring the test process's logging
        log_level="warning",
        timeout_graceful_shutdown=2,
    )
    server = _ThreadServer(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)
    thread.start()
    try:
        _wait_until_serving(name, root + probe_path, probe_headers or {}, thread)
        yield fake
    finally:
        if before_stop is not None:
            before_stop(fake)
        server.stop()
        thread.join(timeout=10)
        sock.close()


def _wait_until_serving(
    name: str, url: str, headers: dict[str, str], thread: threading.Thread, timeout: float = 10.0
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if not thread.is_alive():
            raise RuntimeError(f"{name} server thread exited during startup")
        try:
            if LOCAL.get(url, headers=headers, timeout=1.0).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not answer at {url} within {timeout}s")
        time.sleep(0.02)


@dataclass(frozen=True)
class ServerProcess:
    root: str  # http://127.0.0.1:{port}
    port: int
    process: "subprocess.Popen[str]"

    def kill_9(self) -> None:
        """The server and its workers, all at once, as a lost machine would (it must have
        been started with `own_group`)."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


@contextmanager
def server_process(
    env: Mapping[str, str],
    *,
    workers: int | None = 1,
    port: int | None = None,
    command: Sequence[str] | None = None,
    cwd: Path | None = None,
    log: Path | None = None,
    own_group: bool = False,
    start_seconds: float = 60,
    stop_seconds: float = 20,
) -> Iterator[ServerProcess]:
    """`agent-memory serve --port {port} [--workers {workers}]` (or `command`, which must
    serve on `port`) with the environment and `env` ("{root}" in a value: the server's
    root URL), once its /health answers 200; stopped
    (SIGTERM) when the block ends, unless it has ended already. `workers` None: serve's
    default. Its output goes to `log` (quoted when it fails to start), else nowhere.
    `own_group`: a process group of its own, so `kill_9` kills its workers too."""
    port = port or free_port()
    root = f"http://127.0.0.1:{port}"
    env = {k: v.replace("{root}", root) for k, v in env.items()}  # e.g. PUBLIC_URL
    if command is None:
        command = [sys.executable, "-m", "api.cli", "serve", "--port", str(port)]
        if workers is not None:
            command += ["--workers", str(workers)]
    with open(log or os.devnull, "w") as output:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env={**os.environ, **env},
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=own_group,
        )
    server = ServerProcess(root, port, process)
    try:
        deadline = time.monotonic() + start_seconds
        while True:
            try:
                if LOCAL.get(f"{server.root}/health", timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            said = log.read_text(errors="replace")[-3000:] if log else ""
            assert process.poll() is None, f"the server exited\n{said}"
            assert time.monotonic() < deadline, f"the server never answered\n{said}"
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=stop_seconds)
