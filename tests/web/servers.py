"""`agent-memory serve` as a real process for the browser tests, in either auth mode, on a
fresh SQLite file; stopped (and its log shown on a failed start) when the block ends."""

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.fakes.serving import server_process
from tests.parallel import free_port

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
    command = None
    if access_token_seconds is not None:
        command = [sys.executable, "-m", "tests.web.short_tokens"]
        command += [str(port), str(access_token_seconds)]
    with tempfile.TemporaryDirectory() as data:
        settings = {
            "STORE": "sqlite",
            "SQLITE_PATH": str(Path(data) / "web.db"),
            "ENCRYPTION_KEY": "k" * 40,
            **{k.replace("{root}", root): v.replace("{root}", root) for k, v in env.items()},
        }
        with server_process(
            settings, port=port, command=command, cwd=ROOT, log=Path(data) / "server.log"
        ):
            yield root
