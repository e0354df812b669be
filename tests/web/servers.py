"""`agent-memory serve` as a real process for the browser tests, in either auth mode, on a
fresh SQLite file; stopped (and its log shown on a failed start) when the block ends."""

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2

from api.store.dynamodb_local import free_port

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def serving(
    env: dict[str, str], *, host: str = "127.0.0.1", access_token_seconds: int | None = None
) -> Iterator[str]:
    """The server's root URL, as the browser should open it (`host` names it: google mode's
    FRONTEND_URL must be the origin the page runs on). `access_token_seconds`: tokens that
    expire in seconds (tests/web/short_tokens.py), for a test that waits for one to expire."""
    port = free_port()
    root = f"http://{host}:{port}"
    command = [sys.executable, "-m", "api.cli", "serve", "--port", str(port), "--workers", "1"]
    if access_token_seconds is not None:
        command = [sys.executable, "-m", "tests.web.short_tokens"]
        command += [str(port), str(access_token_seconds)]
    with tempfile.TemporaryDirectory() as data:
        log_path = Path(data) / "server.log"
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                env={
                    **os.environ,
                    "STORE": "sqlite",
                    "SQLITE_PATH": str(Path(data) / "web.db"),
                    "ENCRYPTION_KEY": "k" * 40,
                    **{
                        k.replace("{root}", root): v.replace("{root}", root) for k, v in env.items()
                    },
                },
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                deadline = time.monotonic() + 60
                while True:
                    try:
                        if httpx2.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                            break
                    except httpx2.TransportError:
                        pass
                    assert process.poll() is None, log_path.read_text()[-3000:]
                    assert time.monotonic() < deadline, "the server never answered"
                    time.sleep(0.1)
                yield root
            finally:
                process.terminate()
                process.wait(timeout=20)
