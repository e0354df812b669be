"""The web app's own unit tests (Vitest: the form renderer, the SSE reader), run by pytest so
that `./dev test` fails when they fail."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.parallel import one_at_a_time
from tests.web.conftest import WEB_BUILD

WEB = Path(__file__).resolve().parents[2] / "web"


def test_vitest_passes(tmp_path_factory: pytest.TempPathFactory) -> None:
    npm = shutil.which("npm")
    if npm is None:
        if os.environ.get("CI") == "true":
            pytest.fail("npm is missing: CI must run the web app's unit tests")
        pytest.skip("npm is missing (Node 20.19+ runs the web app's unit tests)")
    with one_at_a_time(tmp_path_factory, WEB_BUILD):  # not while another worker builds
        if not (WEB / "node_modules").is_dir():
            subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=WEB, check=True)
    result = subprocess.run(
        [npm, "test", "--silent"],
        cwd=WEB,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "CI": "true"},
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "passed" in result.stdout
