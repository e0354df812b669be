"""Who may read /metrics (METRICS: off, loopback, token), and readiness apart from liveness."""

import asyncio
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import ConfigError, Settings, check_settings
from api.main import create_app
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from tests.observability.conftest import loopback_client

TOKEN = "m" * 40


def changed(settings: Settings, **changes: object) -> Settings:
    """The settings with some variables set otherwise, read as from the environment."""
    return Settings.model_validate({**settings.model_dump(), **changes})


def test_loopback_is_the_default_and_admits_this_machine_only(settings: Settings) -> None:
    assert settings.metrics == "loopback"
    app = create_app(settings)
    for peer in (("127.0.0.1", 1), ("127.9.9.9", 1), ("::1", 1), ("::ffff:127.0.0.1", 1)):
        with loopback_client(app, peer) as client:
            assert client.get("/metrics").status_code == 200, peer
    for peer in (("10.0.0.5", 1), ("192.168.1.2", 1), ("2001:db8::1", 1), ("testclient", 1)):
        with loopback_client(app, peer) as client:
            refused = client.get("/metrics")
            assert refused.status_code == 403, peer
            assert refused.json()["code"] == "metrics_forbidden"
            assert refused.json()["request_id"] == refused.headers["X-Request-ID"]


def test_loopback_refuses_what_a_proxy_on_this_machine_relays(client: TestClient) -> None:
    for header in ("X-Forwarded-For", "Forwarded", "X-Real-IP"):
        refused = client.get("/metrics", headers={header: "203.0.113.7"})
        assert refused.status_code == 403, header


def test_loopback_means_the_peer_in_google_mode_too(settings: Settings) -> None:
    google = changed(
        settings,
        auth_mode="google",
        public_url="https://api.example.com",
        jwt_secret="j" * 40,
        encryption_key="e" * 40,
        google_client_id="client",
        google_client_secret="secret",
        frontend_url="https://app.example.com",
    )
    app = create_app(google)
    with TestClient(app, base_url="https://api.example.com", client=("127.0.0.1", 1)) as client:
        assert client.get("/metrics").status_code == 200  # no user needed
    with TestClient(app, base_url="https://api.example.com", client=("198.51.100.4", 1)) as client:
        assert client.get("/metrics").status_code == 403


def test_off_is_as_if_absent(settings: Settings) -> None:
    app = create_app(changed(settings, metrics="off"))
    with loopback_client(app) as client:
        response = client.get("/metrics")
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"


def test_token_admits_its_bearer_from_anywhere(settings: Settings) -> None:
    app = create_app(changed(settings, metrics="token", metrics_token=TOKEN))
    with loopback_client(app, ("198.51.100.4", 1)) as client:
        assert (
            client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        )
        for sent in (None, f"Bearer {TOKEN}x", f"Basic {TOKEN}", "Bearer ", TOKEN):
            headers = {"Authorization": sent} if sent is not None else {}
            refused = client.get("/metrics", headers=headers)
            assert refused.status_code == 401, sent
            assert refused.json()["code"] == "metrics_unauthorized"
            assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    with loopback_client(app) as client:  # loopback is no exception
        assert client.get("/metrics").status_code == 401


@pytest.mark.parametrize("token", [None, "short"])
def test_token_mode_needs_a_long_token(settings: Settings, token: str | None) -> None:
    with pytest.raises(ConfigError, match="METRICS_TOKEN"):
        check_settings(changed(settings, metrics="token", metrics_token=token))


def test_ready_when_the_store_answers(client: TestClient) -> None:
    response = client.get("/health/ready")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "store": "sqlite"}


def test_not_ready_once_the_store_is_closed_while_still_alive(
    settings: Settings, tmp_path: Path
) -> None:
    table = SqliteTable(tmp_path / "closing.db", "closing", load_definition())
    app = create_app(settings, table=table)
    with loopback_client(app) as client:
        assert client.get("/health/ready").status_code == 200
        asyncio.run(table.close())
        response = client.get("/health/ready", headers={"X-Request-ID": "probe-1"})
        assert response.status_code == 503
        assert response.json() == {
            "status": "unavailable",
            "code": "store_error",
            "message": "Something went wrong on our side.",
            "request_id": "probe-1",
        }
        assert client.get("/health").status_code == 200  # alive: no restart needed
