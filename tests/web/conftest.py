"""Browser tests: a real server process in local mode serving the built app, driven by
Python Playwright on Debian's Chromium (/usr/bin/chromium; Playwright's own browser download
is never used). Screenshots go to artifacts/web/ (not committed)."""

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.serving import server_process
from tests.parallel import one_at_a_time

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "artifacts" / "web"
WEB_BUILD = "web-build"  # the lock of whatever writes web/node_modules or web/dist
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
def built_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """web/dist, built if its sources changed (as `./dev serve` does): by one worker, the
    others then finding it built."""
    if not CHROMIUM.exists():
        _missing("/usr/bin/chromium is missing (apt-get install chromium)")
    with one_at_a_time(tmp_path_factory, WEB_BUILD):
        result = subprocess.run(
            ["bash", str(ROOT / "web" / "scripts" / "build.sh")], capture_output=True, text=True
        )
    assert result.returncode == 0, result.stderr[-4000:]
    return ROOT / "web" / "dist"


@pytest.fixture(scope="session")
def server(built_app: Path) -> Iterator[str]:
    """`agent-memory serve` in local mode on a fresh SQLite file, with the offline model."""
    with tempfile.TemporaryDirectory() as data:
        env = {
            "AUTH_MODE": "local",
            "STORE": "sqlite",
            "SQLITE_PATH": str(Path(data) / "web.db"),
            "ENCRYPTION_KEY": "k" * 40,
            "MEMORY_EMBEDDING_BACKEND": "none",
        }
        with server_process(env, log=Path(data) / "server.log") as running:
            yield running.root


@pytest.fixture(scope="module")
def browser(built_app: Path) -> Iterator[object]:
    from playwright.sync_api import expect, sync_playwright

    # A page's answer waits on a server and a fake model in processes of their own, on a
    # machine the other half of the suite keeps busy: 5 s (Playwright's default) was seen
    # to pass by; a passing check waits no longer for a longer limit.
    expect.set_options(timeout=15_000)
    # Per module, not per session: while Playwright's sync API runs, an event loop is running
    # in the main thread, and any later test calling asyncio.run() would fail.
    # launch() gives every browser a new, temporary --user-data-dir of its own.
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_page(
    browser: Any,
    server: str,
    *,
    failed_requests: bool = False,
    console_errors_but: list[str] | None = None,
    **options: Any,
) -> Iterator[Any]:
    """A page of a new browser context at 1440 x 900 on `server` (`options`: more of the
    context's), failing its test on a script error; with `failed_requests`, on a request
    that failed or was cancelled; with `console_errors_but`, on a console error, but for a
    fetch answered one of those statuses (Chromium logs each as an error; a test that
    provokes one on purpose names it there)."""
    context = browser.new_context(
        base_url=server, viewport={"width": 1440, "height": 900}, **options
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    if failed_requests:
        page.on("requestfailed", lambda r: errors.append(f"{r.method} {r.url}: {r.failure}"))
    if console_errors_but is not None:
        expected = console_errors_but

        def console(message: Any) -> None:
            if message.type == "error" and not any(
                f"status of {s}" in message.text for s in expected
            ):
                errors.append(f"console: {message.text}")

        page.on("console", console)
    yield page
    context.close()
    assert not errors, errors


@pytest.fixture
def page(browser: Any, server: str) -> Iterator[Any]:
    yield from open_page(browser, server)


def overflow(page: Any) -> int:
    """How many pixels the page is wider than its window (0 when it fits)."""
    width: int = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    return width


def shoot(page: object, name: str) -> Path:
    """A full-page screenshot at the page's current width, kept as an artifact."""
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    width = page.viewport_size["width"] if page.viewport_size else 0
    path = ARTIFACTS / f"{name}-{width}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
