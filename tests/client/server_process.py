"""A memory server in a process of its own, as a user runs it (`python -m api.cli serve`,
SQLite in a file of the caller's choosing): for the client's tests and its benchmark."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from api.store.dynamodb_local import free_port


@dataclass
class MemoryServer:
    url: str
    http: httpx2.Client
    process: "subprocess.Popen[str]"

    def messages(self, agent: str) -> list[dict[str, Any]]:
        """The agent's stored messages, oldest first."""
        listed = self.http.get(f"/messages/{agent}", params={"limit": 1000})
        assert listed.status_code == 200, listed.text
        stored: list[dict[str, Any]] = listed.json()
        return stored[::-1]

    def kill(self) -> None:
        """kill -9 of the server and its workers."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def said(self, agent: str) -> list[tuple[str, str]]:
        return [(m["role"], m["content"]) for m in self.messages(agent)]


@contextmanager
def memory_server(
    db: Path, *, backend: str = "static", workers: int = 1, env: dict[str, str] | None = None
) -> Iterator[MemoryServer]:
    """`agent-memory serve` in a process group of its own (killed whole by `kill`)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "api.cli", "serve", "--port", str(port), "--workers", str(workers)],
        env={
            **os.environ,
            "STORE": "sqlite",
            "SQLITE_PATH": str(db),
            "ENCRYPTION_KEY": "k" * 40,
            "MEMORY_EMBEDDING_BACKEND": backend,
            **(env or {}),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    http = httpx2.Client(base_url=url, timeout=30)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if http.get("/health").status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert process.poll() is None, "the memory server exited"
            assert time.monotonic() < deadline, "the memory server never answered"
            time.sleep(0.1)
        yield MemoryServer(url, http, process)
    finally:
        http.close()
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)
