"""AUTH_MODE=local: one local user, no sign-in, nothing of the SaaS login exposed."""

from pathlib import Path

from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app


def local_app(tmp_path: Path) -> TestClient:
    return TestClient(create_app(Settings(sqlite_path=tmp_path / "local.db")))


def test_the_local_user_needs_no_sign_in(tmp_path: Path) -> None:
    with local_app(tmp_path) as client:
        me = client.get("/users/me")
        assert me.status_code == 200
        assert me.json()["email"] == "local@localhost"
    with local_app(tmp_path) as client:  # the same user after a restart
        assert client.get("/users/me").json()["email"] == "local@localhost"


def test_local_mode_has_no_login_endpoints(tmp_path: Path) -> None:
    with local_app(tmp_path) as client:
        for method, path in (
            ("GET", "/auth/google/login"),
            ("POST", "/auth/refresh"),
            ("POST", "/auth/api-keys"),
        ):
            assert client.request(method, path).status_code == 404
