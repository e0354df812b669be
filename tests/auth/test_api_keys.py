"""API keys for machine clients: shown once, stored hashed, listed by prefix, revocable."""

from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.kit.secrets import digest
from tests.auth.conftest import access_token, as_user, bearer, browser, sign_in
from tests.fakes.oidc import FakeGoogle


def test_an_api_key_lifecycle(client: TestClient, settings: object) -> None:
    sign_in(client)
    auth = bearer(access_token(client))
    created = client.post("/auth/api-keys", json={"name": "n8n"}, headers=auth)
    assert created.status_code == 201
    key = created.json()["key"]
    assert key.startswith("amk_")
    assert created.json()["prefix"] == key[:12]

    listed = client.get("/auth/api-keys", headers=auth).json()
    assert [k["name"] for k in listed] == ["n8n"]
    assert "key" not in listed[0]
    assert key not in str(listed)
    assert listed[0]["last_used_at"] is None

    me = client.get("/users/me", headers=bearer(key))
    assert me.status_code == 200
    assert me.json()["email"] == "ada@example.com"
    assert client.get("/auth/api-keys", headers=auth).json()[0]["last_used_at"] is not None

    revoked = client.delete(f"/auth/api-keys/{listed[0]['id']}", headers=auth)
    assert revoked.status_code == 204
    after = client.get("/users/me", headers=bearer(key))
    assert after.status_code == 401
    assert after.json()["code"] == "invalid_api_key"
    assert client.get("/auth/api-keys", headers=auth).json() == []


async def test_only_the_hash_of_a_key_is_stored(client: TestClient, settings: object) -> None:
    import sqlite3

    sign_in(client)
    key = client.post(
        "/auth/api-keys", json={"name": "ci"}, headers=bearer(access_token(client))
    ).json()["key"]
    dump = "\n".join(
        row[0]
        for row in sqlite3.connect(settings.sqlite_path).execute(  # type: ignore[attr-defined]
            'SELECT item FROM "agent-memory"'
        )
    )
    assert key not in dump
    assert digest(key) in dump


def test_a_key_name_is_required(client: TestClient) -> None:
    sign_in(client)
    response = client.post(
        "/auth/api-keys", json={"name": ""}, headers=bearer(access_token(client))
    )
    assert response.status_code == 422
    assert response.json()["code"] == "validation_error"


def test_another_users_key_cannot_be_revoked(
    client: TestClient, google: FakeGoogle, app: FastAPI
) -> None:
    sign_in(client)
    ada = bearer(access_token(client))
    key_id = client.post("/auth/api-keys", json={"name": "mine"}, headers=ada).json()["id"]
    as_user(google, "2222", "bob@example.com")
    with browser(app) as bob_browser:
        sign_in(bob_browser)
        bob = bearer(access_token(bob_browser))
        response = bob_browser.delete(f"/auth/api-keys/{key_id}", headers=bob)
        assert response.status_code == 404
        assert bob_browser.get("/auth/api-keys", headers=bob).json() == []
    assert len(client.get("/auth/api-keys", headers=ada).json()) == 1


def test_an_api_key_cannot_manage_api_keys(client: TestClient) -> None:
    sign_in(client)
    key = client.post(
        "/auth/api-keys", json={"name": "n8n"}, headers=bearer(access_token(client))
    ).json()["key"]
    for method, path in (("POST", "/auth/api-keys"), ("GET", "/auth/api-keys")):
        response = client.request(method, path, headers=bearer(key), json={"name": "next"})
        assert response.status_code == 403
        assert response.json()["code"] == "session_required"


def test_a_created_key_is_never_cached(client: TestClient) -> None:
    sign_in(client)
    created = client.post(
        "/auth/api-keys", json={"name": "x"}, headers=bearer(access_token(client))
    )
    assert created.headers["cache-control"] == "no-store"
