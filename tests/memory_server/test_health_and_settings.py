"""GET /health with seed 002's fields, and seed 002's settings read under their own names
beside ours; the server's default port is the seed's, 8283."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from api.config import ConfigError, Settings, load_settings
from api.kit.clock import FrozenClock
from api.main import create_app
from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable
from api.store.dynamodb_local import DynamoDBLocal
from tests.app.test_cli import health_of, run_cli
from tests.auth.conftest import browser
from tests.fakes.oidc import FakeGoogle
from tests.memory_server.conftest import google_settings, local_settings, with_api_key
from tests.parallel import free_port
from tests.runtime.conftest import running

SEED_VARIABLES = (
    "MEMORY_SERVER_HOST",
    "MEMORY_SERVER_PORT",
    "MEMORY_SERVER_DB_PATH",
    "MEMORY_DEFAULT_SEARCH_LIMIT",
    "MEMORY_MAX_SEARCH_LIMIT",
    "MEMORY_MAX_CONTEXT_MESSAGES",
    "HOST",
    "PORT",
    "SQLITE_PATH",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SEED_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_health_in_local_mode_shows_the_database_file(tmp_path: Path, clock: FrozenClock) -> None:
    settings = local_settings(tmp_path)
    with running(settings, clock) as client:
        health = client.get("/health").json()
    assert health["status"] == "ok"
    assert health["embedding_backend"] == "onnx"
    assert health["embedding_dimension"] == 384
    assert health["database_path"] == str(settings.sqlite_path)


def test_health_without_embeddings(tmp_path: Path, clock: FrozenClock) -> None:
    settings = local_settings(tmp_path, memory_embedding_backend="none")
    with running(settings, clock) as client:
        health = client.get("/health").json()
    assert (health["embedding_backend"], health["embedding_dimension"]) == ("none", None)


def test_health_on_dynamodb_shows_no_file(
    tmp_path: Path, clock: FrozenClock, dynamodb_local: DynamoDBLocal
) -> None:
    table = DynamoTable(
        f"health-{uuid.uuid4().hex[:8]}", load_definition(), endpoint_url=dynamodb_local.endpoint
    )
    with running(local_settings(tmp_path), clock, table) as client:
        health = client.get("/health").json()
    assert (health["status"], health["store"]) == ("ok", "dynamodb")
    assert health["database_path"] is None


def test_health_in_google_mode_shows_no_server_path(
    tmp_path: Path, clock: FrozenClock, google: FakeGoogle
) -> None:
    settings = google_settings(tmp_path, google)
    with browser(create_app(settings, clock=clock)) as client:
        anonymous = client.get("/health").json()
        with_api_key(client)
        signed_in = client.get("/health").json()
    for health in (anonymous, signed_in):
        assert health["status"] == "ok"
        assert health["database_path"] is None
        assert str(tmp_path) not in str(health)
        assert health["embedding_dimension"] == 384


def test_the_default_port_is_8283() -> None:
    assert Settings().port == 8283
    assert "8283" in run_cli("serve", "--help", env={}).stdout


def test_seed_002_settings_are_read_by_their_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_SERVER_HOST", "localhost")
    monkeypatch.setenv("MEMORY_SERVER_PORT", "9123")
    monkeypatch.setenv("MEMORY_SERVER_DB_PATH", str(tmp_path / "seed.db"))
    monkeypatch.setenv("MEMORY_DEFAULT_SEARCH_LIMIT", "7")
    monkeypatch.setenv("MEMORY_MAX_SEARCH_LIMIT", "9")
    monkeypatch.setenv("MEMORY_MAX_CONTEXT_MESSAGES", "4")
    settings = load_settings()
    assert (settings.host, settings.port, settings.sqlite_path) == (
        "localhost",
        9123,
        tmp_path / "seed.db",
    )
    assert settings.memory_default_search_limit == 7
    assert settings.memory_max_search_limit == 9
    assert settings.memory_max_context_messages == 4
    # Ours win where both are set.
    monkeypatch.setenv("PORT", "9124")
    monkeypatch.setenv("SQLITE_PATH", str(tmp_path / "ours.db"))
    assert load_settings().port == 9124
    assert load_settings().sqlite_path == tmp_path / "ours.db"


def test_the_seeds_database_path_may_start_at_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_SERVER_DB_PATH", "~/.local-memory/memory.db")
    assert load_settings().sqlite_path == Path.home() / ".local-memory" / "memory.db"


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("MEMORY_SERVER_PORT", "eighty", "PORT or MEMORY_SERVER_PORT"),
        ("MEMORY_SERVER_PORT", "70000", "PORT or MEMORY_SERVER_PORT"),
        ("MEMORY_DEFAULT_SEARCH_LIMIT", "0", "MEMORY_DEFAULT_SEARCH_LIMIT"),
        ("MEMORY_MAX_SEARCH_LIMIT", "x", "MEMORY_MAX_SEARCH_LIMIT"),
        ("MEMORY_MAX_CONTEXT_MESSAGES", "-1", "MEMORY_MAX_CONTEXT_MESSAGES"),
        ("MEMORY_DEFAULT_SEARCH_LIMIT", "21", "MEMORY_DEFAULT_SEARCH_LIMIT"),  # above the max
    ],
)
def test_wrong_seed_settings_are_named(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, named: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=named):
        load_settings()


def test_serve_listens_where_the_seed_settings_say(tmp_path: Path) -> None:
    port = free_port()
    db = tmp_path / "seed-served.db"
    env = {
        **os.environ,
        "MEMORY_SERVER_HOST": "127.0.0.1",
        "MEMORY_SERVER_PORT": str(port),
        "MEMORY_SERVER_DB_PATH": str(db),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "api.cli", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert f"http://127.0.0.1:{port}" in process.stdout.readline()
        health = health_of(port, process)
        assert health["status"] == "ok"
        assert health["database_path"] == str(db)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_wrong_seed_setting_stops_the_cli_with_its_name() -> None:
    result = run_cli("serve", env={"MEMORY_SERVER_PORT": "eighty"})
    assert result.returncode == 2
    assert "MEMORY_SERVER_PORT" in result.stderr
