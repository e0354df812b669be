"""The release check's tests (.ci/release-check runs them with RELEASE_CHECK=1; `./dev test`
runs only the quick ones): what it measured is printed at the end of the run."""

import os
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.release.install import CHECKOUT, REPORT, Dists, run, uv


@pytest.fixture(scope="session")
def version() -> str:
    pyproject = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))
    found: str = pyproject["project"]["version"]
    return found


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """`uv build` of both packages, wheels and sdists, from the checkout (the server's
    build hook builds the web app when its sources changed)."""
    out = tmp_path_factory.mktemp("dist")
    seconds = run(
        [uv(), "build", "--all-packages", "--sdist", "--wheel", "--out-dir", out],
        cwd=CHECKOUT,
        env=os.environ,
    )
    found = Dists(
        server_wheel=_one(out, "agent_memory-*.whl"),
        server_sdist=_one(out, "agent_memory-*.tar.gz"),
        client_wheel=_one(out, "agent_memory_client-*.whl"),
        client_sdist=_one(out, "agent_memory_client-*.tar.gz"),
    )
    REPORT.append(f"built both packages' wheels and sdists in {seconds:.1f} s:")
    for path in (found.server_wheel, found.server_sdist, found.client_wheel, found.client_sdist):
        files = len(zipfile.ZipFile(path).namelist()) if path.suffix == ".whl" else None
        counted = f", {files} files" if files else ""
        REPORT.append(f"  {path.name}: {size(path.stat().st_size)}{counted}")
    return found


def size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def _one(directory: Path, pattern: str) -> Path:
    found = sorted(directory.glob(pattern))
    assert len(found) == 1, f"{pattern}: {found}"
    return found[0]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REPORT:
        terminalreporter.section("release check")
        for line in REPORT:
            terminalreporter.write_line(line)
