"""A memory server in a process of its own, as a user runs it (`python -m api.cli serve`,
SQLite in a file of the caller's choosing): for the client's tests and its benchmark."""

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from tests.fakes.serving import ServerProcess, server_process


@dataclass
class MemoryServer:
    url: str
    http: httpx2.Client
    server: ServerProcess

    @property
    def process(self) -> "subprocess.Popen[str]":
        return self.server.process

    def messages(self, agent: str) -> list[dict[str, Any]]:
        """The agent's stored messages, oldest first."""
        listed = self.http.get(f"/messages/{agent}", params={"limit": 1000})
        assert listed.status_code == 200, listed.text
        stored: list[dict[str, Any]] = listed.json()
        return stored[::-1]

    def kill(self) -> None:
        """kill -9 of the server and its workers."""
        self.server.kill_9()

    def said(self, agent: str) -> list[tuple[str, str]]:
        return [(m["role"], m["content"]) for m in self.messages(agent)]


@contextmanager
def memory_server(
    db: Path, *, backend: str = "static", workers: int = 1, env: dict[str, str] | None = None
) -> Iterator[MemoryServer]:
    """`agent-memory serve` in a process group of its own (killed whole by `kill`)."""
    settings = {
        "STORE": "sqlite",
        "SQLITE_PATH": str(db),
        "ENCRYPTION_KEY": "k" * 40,
        "MEMORY_EMBEDDING_BACKEND": backend,
        **(env or {}),
    }
    with (
        server_process(settings, workers=workers, own_group=True, stop_seconds=10) as server,
        httpx2.Client(base_url=server.root, timeout=30) as http,
    ):
        yield MemoryServer(server.root, http, server)
