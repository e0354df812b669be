"""AUTH_MODE=local: one local user, no sign-in, nothing of the SaaS login exposed."""

from pathlib import Path

from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app

LOCAL = "http://127.0.0.1"


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


def test_host_headers_that_only_look_local_are_refused(tmp_path: Path) -> None:
    """URL parsers read these as localhost; a browser sent them for another name."""
    with local_app(tmp_path) as client:
        for host in (
            "evil.com@localhost",
            "localhost#.evil.com",
            "localhost/.evil.com",
            "localhost:8000@evil.com",
            "localhost:99999999",
            "",
        ):
            refused = client.get("/users/me", headers={"Host": host})
            assert refused.status_code == 403, host
            assert refused.json()["code"] == "host_rejected"
        for host in ("localhost:8000", "127.0.0.1", "[::1]:8000", "LOCALHOST"):
            assert client.get("/users/me", headers={"Host": host}).status_code == 200, host


def test_origins_that_only_look_local_are_refused(tmp_path: Path) -> None:
    with local_app(tmp_path) as client:
        for origin in ("http://evil.com@localhost", "http://localhost#.evil.com", "null"):
            refused = client.get("/users/me", headers={"Origin": origin})
            assert refused.status_code == 403, origin
        assert client.get("/users/me", headers={"Origin": "http://[::1]:3000"}).status_code == 200


def test_local_data_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    import os
    import stat

    data = tmp_path / "data" / "nested"
    old = os.umask(0o022)  # a usual umask, which would leave files readable by all
    try:
        with TestClient(create_app(Settings(sqlite_path=data / "m.db")), base_url=LOCAL) as c:
            assert c.post("/agents", json={"name": "Kit"}).status_code == 201
            files = [data / "m.db", data / "m.db-wal", data / "encryption.key"]
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in files}
    finally:
        os.umask(old)
    assert modes == {"m.db": 0o600, "m.db-wal": 0o600, "encryption.key": 0o600}
    for folder in (data, data.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
