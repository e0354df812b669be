"""The commands a newcomer runs, run as they would run them."""

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import boto3

from api.store.dynamodb_local import DynamoDBLocal
from tests.parallel import free_port


def run_cli(
    *args: str, env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "api.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_create_table_on_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "data" / "store.db"
    result = run_cli("create-table", env={"STORE": "sqlite", "SQLITE_PATH": str(db)})
    assert result.returncode == 0, result.stderr
    assert "Table ready" in result.stdout
    assert db.exists()


def test_create_table_on_dynamodb_local(dynamodb_local: DynamoDBLocal) -> None:
    env = {
        "STORE": "dynamodb",
        "DYNAMODB_ENDPOINT": dynamodb_local.endpoint,
        "DYNAMODB_TABLE": "cli-created",
    }
    first = run_cli("create-table", env=env)
    assert first.returncode == 0, first.stderr
    again = run_cli("create-table", env=env)  # idempotent
    assert again.returncode == 0, again.stderr
    assert "DynamoDB" in again.stdout
    client = boto3.client("dynamodb", endpoint_url=dynamodb_local.endpoint, region_name="us-east-1")
    assert client.describe_table(TableName="cli-created")["Table"]["TableStatus"] == "ACTIVE"


def test_a_wrong_setting_stops_the_cli_with_its_name() -> None:
    result = run_cli("create-table", env={"STORE": "mysql"})
    assert result.returncode == 2
    assert "STORE" in result.stderr
    assert "Traceback" not in result.stderr


def health_of(port: int, process: subprocess.Popen[str]) -> dict[str, str]:
    """/health of a server process starting on `port`, once it answers."""
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                health: dict[str, str] = json.loads(r.read())
                return health
        except OSError:
            assert process.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "the server never answered"
            time.sleep(0.2)


@contextmanager
def serving(
    tmp_path: Path, preexec_fn: Callable[[], object] | None = None
) -> Iterator[tuple[int, str, "subprocess.Popen[str]"]]:
    """`serve` on a free port, no --workers: its port, its first line, the process."""
    port = free_port()
    env = {**os.environ, "STORE": "sqlite", "SQLITE_PATH": str(tmp_path / "serve.db")}
    process = subprocess.Popen(
        [sys.executable, "-m", "api.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=preexec_fn,
    )
    try:
        assert process.stdout is not None
        yield port, process.stdout.readline(), process
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_serve_prints_its_url_and_answers_health(tmp_path: Path) -> None:
    with serving(tmp_path) as (port, first_line, process):
        assert f"http://127.0.0.1:{port}" in first_line
        health = health_of(port, process)
        assert health["status"] == "ok"
        assert health["store"] == "sqlite"


def test_serve_starts_a_worker_per_usable_core_by_default(tmp_path: Path) -> None:
    """Pinned to one core (taskset's way), `serve` with no --workers starts one worker
    (api/kit/cores.py; os.cpu_count() would count the machine's cores)."""

    def one_core() -> None:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    with serving(tmp_path, one_core) as (port, first_line, process):
        assert "1 worker(s)" in first_line
        assert health_of(port, process)["status"] == "ok"


def test_serve_refuses_a_public_address_in_local_mode() -> None:
    result = run_cli("serve", "--host", "0.0.0.0", env={"AUTH_MODE": "local"})  # noqa: S104
    assert result.returncode == 2
    assert "ALLOW_REMOTE" in result.stderr


def test_serve_refuses_an_embedding_backend_it_cannot_reach(tmp_path: Path) -> None:
    env = {
        "SQLITE_PATH": str(tmp_path / "serve.db"),
        "MEMORY_EMBEDDING_BACKEND": "ollama",
        "OLLAMA_BASE_URL": f"http://127.0.0.1:{free_port()}",
    }
    result = run_cli("serve", "--port", str(free_port()), env=env)
    assert result.returncode == 2
    assert "OLLAMA_BASE_URL" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_refuses_an_unknown_embedding_backend(tmp_path: Path) -> None:
    env = {"SQLITE_PATH": str(tmp_path / "serve.db"), "MEMORY_EMBEDDING_BACKEND": "word2vec"}
    result = run_cli("serve", env=env)
    assert result.returncode == 2
    assert "MEMORY_EMBEDDING_BACKEND" in result.stderr


def test_uvicorn_finds_the_app_as_the_seeds_start_it(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "STORE": "sqlite", "SQLITE_PATH": str(tmp_path / "seed.db")}
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "api.main:app", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert health_of(port, process)["store"] == "sqlite"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_importing_the_app_module_builds_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import api.main as m; print('app' in vars(m))"],
        env={**os.environ, "STORE": "not-a-store"},  # building an app would fail on it
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout.strip()) == (0, "False"), result.stderr
