"""Runs a fake outside service on a free port of 127.0.0.1, in a thread, for a block."""

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal, TypeVar

import httpx2
import uvicorn
from starlette.types import ASGIApp

T = TypeVar("T")


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
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)
    thread.start()
    try:
        _wait_until_serving(name, root + probe_path, probe_headers or {}, thread)
        yield fake
    finally:
        if before_stop is not None:
            before_stop(fake)
        server.should_exit = True
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
            if httpx2.get(url, headers=headers, timeout=1.0).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not answer at {url} within {timeout}s")
        time.sleep(0.02)
