"""The service skeleton: health, JSON errors for everything, settings that fail loudly."""

import asyncio
import contextlib
import gc
import sqlite3
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel

from api import __version__
from api.config import ConfigError, Settings, load_settings
from api.errors import NotFound
from api.http.deps.app import TableDep
from api.main import create_app
from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable
from api.store.sqlite import SqliteTable
from api.store.table import StoreError
from tests.parallel import free_port

LOCAL = "http://127.0.0.1"  # local mode answers only requests to localhost


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(store="sqlite", sqlite_path=tmp_path / "app.db", dynamodb_table="app-test")


@pytest.fixture
def clock_now() -> float:
    return time.time()


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    app = create_app(settings)

    class Body(BaseModel):
        name: str
        count: int

    # Routes that exercise each kind of error the handlers must shape.
    @app.post("/_test/validate")
    async def validate(body: Body) -> Body:
        return body

    @app.get("/_test/app-error")
    async def app_error() -> None:
        raise NotFound("No agent with that id.")

    @app.get("/_test/crash")
    async def crash() -> None:
        raise RuntimeError("secret internals")

    return app


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        yield client


def test_health_reports_the_store(client: TestClient, settings: Settings) -> None:
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "store": "sqlite",
        "table": "app-test",
        "version": __version__,
        "embedding_backend": "onnx",
        "embedding_dimension": 384,
        "database_path": str(settings.sqlite_path),  # local mode only (tests/memory_server)
    }
    assert settings.sqlite_path.exists()  # the table was created at start


def test_the_version_is_the_one_in_pyproject(client: TestClient) -> None:
    """One place: pyproject.toml's version, read from the installed metadata; /health and
    the OpenAPI document report it."""
    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project.get("dynamic", [])
    assert __version__ == project["version"]
    assert client.get("/health").json()["version"] == project["version"]
    assert client.get("/openapi.json").json()["info"]["version"] == project["version"]


def test_readiness_is_503_when_the_store_is_unreachable(settings: Settings) -> None:
    table = DynamoTable(
        "t", load_definition(), endpoint_url=f"http://127.0.0.1:{free_port()}", max_attempts=1
    )
    app = create_app(settings.model_copy(update={"create_table": False}), table=table)
    with TestClient(app, base_url=LOCAL) as client:
        response = client.get("/health/ready")
        alive = client.get("/health")
    assert response.status_code == 503
    assert response.json()["code"] == "store_unavailable"
    assert response.json()["status"] == "unavailable"
    assert "127.0.0.1" not in response.text  # engine details stay in the logs
    assert alive.status_code == 200  # liveness: the process serves, whatever the store does
    asyncio.run(table.close())


def test_server_side_store_errors_keep_their_code_but_not_their_details(app: FastAPI) -> None:
    @app.get("/_test/store-failure")
    async def store_failure() -> None:
        raise StoreError("SQLite failed on /home/someone/secret/path.db: disk I/O error")

    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        response = client.get("/_test/store-failure")
    assert response.status_code == 500
    assert response.json()["code"] == "store_error"
    assert "/home/someone" not in response.text


async def test_expired_items_are_swept_from_sqlite_at_start(
    settings: Settings, clock_now: float
) -> None:
    table = SqliteTable(settings.sqlite_path, settings.dynamodb_table, load_definition())
    await table.create()
    await table.put({"pk": "p", "sk": "old", "ttl": int(clock_now) - 10})
    await table.put({"pk": "p", "sk": "new", "ttl": int(clock_now) + 3600})
    await table.close()
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert client.get("/health").status_code == 200
        # The sweep runs beside the server's start, not before it: a busy machine may
        # answer /health first.
        for _ in range(200):  # 10 s
            if (rows := stored_keys(settings)) == [("new",)]:
                break
            await asyncio.sleep(0.05)
    assert rows == [("new",)]


def stored_keys(settings: Settings) -> list[tuple[str]]:
    with contextlib.closing(sqlite3.connect(settings.sqlite_path)) as conn:
        return conn.execute('SELECT sk FROM "app-test" WHERE pk = ? ORDER BY sk', ("p",)).fetchall()


def test_validation_errors_are_json_with_a_code(client: TestClient) -> None:
    response = client.post("/_test/validate", json={"name": "x", "count": "many"})
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "validation_error"
    assert "count" in body["message"]
    assert "many" not in response.text  # inputs are never echoed: they may be secrets


def test_app_errors_carry_their_status_and_code(client: TestClient) -> None:
    response = client.get("/_test/app-error")
    assert response.status_code == 404
    assert response.json() == {
        "code": "not_found",
        "message": "No agent with that id.",
        "request_id": response.headers["X-Request-ID"],
    }


def test_unknown_routes_and_methods_are_json(client: TestClient) -> None:
    missing = client.get("/no/such/route")
    assert missing.status_code == 404
    assert missing.json()["code"] == "not_found"
    wrong = client.delete("/health")
    assert wrong.status_code == 405
    assert wrong.json()["code"] == "method_not_allowed"


def test_unexpected_errors_hide_internals(client: TestClient) -> None:
    response = client.get("/_test/crash")
    assert response.status_code == 500
    assert response.json()["code"] == "internal_error"
    assert "secret internals" not in response.text


def test_store_errors_reach_clients_typed(app: FastAPI) -> None:
    @app.get("/_test/bad-cursor")
    async def bad_cursor(table: TableDep) -> None:
        await table.query("Agent#a1", limit=5, cursor="garbage!")

    with TestClient(app, base_url=LOCAL) as client:
        response = client.get("/_test/bad-cursor")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_cursor"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("STORE", "mysql"),
        ("PORT", "eighty"),
        ("DYNAMODB_TABLE", "a"),
        ("DYNAMODB_ENDPOINT", "not a url"),
        ("FRONTEND_URL", "nope"),
        ("LOG_LEVEL", "loud"),
    ],
)
def test_a_wrong_setting_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable):
        load_settings()


def test_settings_default_to_the_embedded_store(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STORE", "SQLITE_PATH", "DYNAMODB_TABLE"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings()
    assert settings.store == "sqlite"
    assert settings.sqlite_path.name == "agent-memory.db"
    assert "agent-memory" in str(settings.sqlite_path.parent)


def test_google_mode_needs_its_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTH_MODE", "google")
    monkeypatch.setenv("JWT_SECRET", "short")
    monkeypatch.delenv("GOOGLE_CLIENT_ID", raising=False)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    for variable in ("JWT_SECRET", "GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET", "PUBLIC_URL"):
        assert variable in str(raised.value)
    # Without it, Google's return address and the links the server gives (MCP's metadata,
    # seed 004's dashboard_url) would come from whatever Host a request claims.
    assert "PUBLIC_URL: required when AUTH_MODE=google" in str(raised.value)


def test_local_mode_refuses_a_public_address_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AUTH_MODE", "local")
    monkeypatch.setenv("HOST", "0.0.0.0")  # noqa: S104 (the address being refused)
    with pytest.raises(ConfigError, match="HOST"):
        load_settings()
    monkeypatch.setenv("ALLOW_REMOTE", "true")
    assert load_settings().host == "0.0.0.0"  # noqa: S104


@pytest.mark.parametrize(
    ("variable", "value"),
    [("COOKIE_SECURE", "false"), ("FRONTEND_URL", "http://app.example.com")],
)
def test_google_mode_refuses_weak_cookie_settings(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv("AUTH_MODE", "google")
    monkeypatch.setenv("JWT_SECRET", "s" * 40)
    monkeypatch.setenv("GOOGLE_CLIENT_ID", "id")
    monkeypatch.setenv("GOOGLE_CLIENT_SECRET", "secret")
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable):
        load_settings()


def test_start_up_freezes_what_it_made_and_tunes_the_collector(settings: Settings) -> None:
    """`serve` loads the app with the collector off; start-up freezes what it made (no
    later collection walks it) and turns the collector on with young collections every
    10,000 allocations (docs/performance.md)."""
    before = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    gc.disable()
    try:
        with TestClient(create_app(settings), base_url=LOCAL):
            assert gc.isenabled()
            assert gc.get_threshold() == (10_000, 10, 10)
            assert gc.get_freeze_count() > 10_000  # the modules' and the app's objects
    finally:
        gc.set_threshold(*before)
        gc.enable()
