"""Browser tests: a real server process in local mode serving the built app, driven by
Python Playwright on Debian's Chromium (/usr/bin/chromium; Playwright's own browser download
is never used). Screenshots go to artifacts/web/ (not committed)."""

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from api.store.dynamodb_local import free_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "artifacts" / "web"
# Chromium as root in a container: no sandbox, no GPU, nothing fetched in the background.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _missing(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what}: CI must run the browser tests (./dev test installs Chromium)")
    pytest.skip(what)


@pytest.fixture(scope="session")
def built_app() -> Path:
    """web/dist, built if its sources changed (as `./dev serve` does)."""
    if not CHROMIUM.exists():
        _missing("/usr/bin/chromium is missing (apt-get install chromium)")
    result = subprocess.run(
        ["bash", str(ROOT / "web" / "scripts" / "build.sh")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return ROOT / "web" / "dist"


@pytest.fixture(scope="session")
def server(built_app: Path) -> Iterator[str]:
    """`agent-memory serve` in local mode on a fresh SQLite file, with the offline model."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        log = open(Path(data) / "server.log", "w")  # noqa: SIM115 - closed below
        process = subprocess.Popen(
            [sys.executable, "-m", "api.cli", "serve", "--port", str(port), "--workers", "1"],
            env={
                **os.environ,
                "AUTH_MODE": "local",
                "STORE": "sqlite",
                "SQLITE_PATH": str(Path(data) / "web.db"),
                "ENCRYPTION_KEY": "k" * 40,
                "MEMORY_EMBEDDING_BACKEND": "none",
            },
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        root = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx2.get(f"{root}/health").status_code == 200:
                        break
                except httpx2.TransportError:
                    pass
                assert process.poll() is None, (Path(data) / "server.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "the server never answered"
                time.sleep(0.1)
            yield root
        finally:
            process.terminate()
            process.wait(timeout=20)
            log.close()


@pytest.fixture(scope="session")
def browser(built_app: Path) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    # launch() gives every browser a new, temporary --user-data-dir of its own.
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def shoot(page: object, name: str) -> Path:
    """A full-page screenshot at the page's current width, kept as an artifact."""
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    width = page.viewport_size["width"] if page.viewport_size else 0
    path = ARTIFACTS / f"{name}-{width}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
