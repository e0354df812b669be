"""AUTH_MODE=local: one local user, no sign-in, nothing of the SaaS login exposed."""

from pathlib import Path

from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app


def local_app(tmp_path: Path) -> TestClient:
    return TestClient(
        create_app(Settings(sqlite_path=tmp_path / "local.db")), base_url="http://127.0.0.1"
    )


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


def test_pages_of_other_sites_cannot_use_the_local_server(tmp_path: Path) -> None:
    with local_app(tmp_path) as client:
        evil = client.get("/users/me", headers={"Origin": "https://evil.example"})
        assert evil.status_code == 403
        assert evil.json()["code"] == "origin_rejected"
        for origin in ("http://localhost:5173", "http://127.0.0.1:8000"):
            assert client.get("/users/me", headers={"Origin": origin}).status_code == 200


def test_a_rebound_dns_name_cannot_reach_the_local_server(tmp_path: Path) -> None:
    with local_app(tmp_path) as client:
        rebound = client.get("/users/me", headers={"Host": "attacker.example"})
        assert rebound.status_code == 403
        assert rebound.json()["code"] == "host_rejected"


def test_allow_remote_permits_the_bind_but_not_other_host_names(tmp_path: Path) -> None:
    settings = Settings(sqlite_path=tmp_path / "l.db", host="0.0.0.0", allow_remote=True)  # noqa: S104
    with TestClient(create_app(settings), base_url="http://localhost:8000") as client:
        assert client.get("/users/me").status_code == 200
        rebound = client.get("/users/me", headers={"Host": "rebind.attacker.example:8000"})
        assert rebound.status_code == 403
