"""Sessions after sign-in: access tokens, the rotating refresh cookie, reuse, logout, CSRF."""

import base64
import json
import time

import httpx2
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.auth.service import REUSE_GRACE_SECONDS
from api.auth.tokens import AUDIENCE, ISSUER, TokenIssuer, issuer_for
from api.kit.clock import FrozenClock
from tests.auth.conftest import JWT_SECRET, ORIGIN, access_token, bearer, browser, sign_in


def b64url(data: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def refresh_value(client: TestClient) -> str:
    value = client.cookies.get("am_refresh", path="/auth")
    assert value
    return value


def refresh_with(app: FastAPI, cookie: str) -> httpx2.Response:
    """A refresh from another browser that holds only this cookie (a thief, or a replay)."""
    with browser(app) as other:
        other.cookies.set("am_refresh", cookie, domain="testserver.local", path="/auth")
        return other.post("/auth/refresh", headers=ORIGIN)


def test_every_refresh_rotates_the_cookie(client: TestClient) -> None:
    sign_in(client)
    first = refresh_value(client)
    access_token(client)
    second = refresh_value(client)
    access_token(client)
    assert len({first, second, refresh_value(client)}) == 3


def test_a_reused_refresh_token_ends_the_whole_session(
    client: TestClient, app: FastAPI, clock: FrozenClock
) -> None:
    sign_in(client)
    stolen = refresh_value(client)
    token = access_token(client)  # the owner refreshes: `stolen` is now used
    current = refresh_value(client)
    clock.advance(REUSE_GRACE_SECONDS + 1)

    replay = refresh_with(app, stolen)
    assert replay.status_code == 401
    assert replay.json()["code"] == "refresh_token_reused"

    after = refresh_with(app, current)
    assert after.status_code == 401  # the owner's newer token died with the family
    me = client.get("/users/me", headers=bearer(token))
    assert me.status_code == 401
    assert me.json()["code"] == "invalid_token"


def test_tabs_refreshing_at_once_keep_the_session(
    client: TestClient, app: FastAPI, clock: FrozenClock
) -> None:
    sign_in(client)
    shared = refresh_value(client)
    first, second = refresh_with(app, shared), refresh_with(app, shared)
    assert first.status_code == second.status_code == 200
    clock.advance(2)
    for response in (first, second):
        assert (
            client.get("/users/me", headers=bearer(response.json()["access_token"])).status_code
            == 200
        )
    assert client.post("/auth/refresh", headers=ORIGIN).status_code == 200


def test_token_responses_are_never_cached(client: TestClient) -> None:
    sign_in(client)
    response = client.post("/auth/refresh", headers=ORIGIN)
    assert response.headers["cache-control"] == "no-store"


def test_a_session_outlives_no_store_failure(client: TestClient) -> None:
    """Only an ended session clears the cookie: a refresh refused for another reason keeps it."""
    sign_in(client)
    before = refresh_value(client)
    refused = client.post("/auth/refresh")  # no Origin: refused before the store is read
    assert refused.status_code == 403
    assert refresh_value(client) == before


def test_logout_ends_the_session(client: TestClient, app: FastAPI) -> None:
    sign_in(client)
    token = access_token(client)
    cookie = refresh_value(client)
    assert client.get("/users/me", headers=bearer(token)).status_code == 200
    response = client.post("/auth/logout", headers=ORIGIN)
    assert response.status_code == 204
    assert 'am_refresh=""' in response.headers["set-cookie"]
    again = refresh_with(app, cookie)
    assert again.status_code == 401
    assert client.get("/users/me", headers=bearer(token)).status_code == 401


def test_cookie_endpoints_answer_only_the_frontend(client: TestClient) -> None:
    sign_in(client)
    for headers in ({}, {"Origin": "https://evil.example"}, {"Origin": "null"}):
        for path in ("/auth/refresh", "/auth/logout"):
            response = client.post(path, headers=headers)
            assert response.status_code == 403
            assert response.json()["code"] == "csrf_rejected"
    assert client.post("/auth/refresh", headers=ORIGIN).status_code == 200


def test_refresh_without_a_cookie_is_refused(client: TestClient) -> None:
    response = client.post("/auth/refresh", headers=ORIGIN)
    assert response.status_code == 401
    assert response.json()["code"] == "invalid_refresh_token"


def test_requests_without_valid_credentials_are_refused(client: TestClient) -> None:
    missing = client.get("/users/me")
    assert missing.status_code == 401
    assert missing.json()["code"] == "not_authenticated"
    for credential in ("garbage", "Bearer", "Basic abc"):
        response = client.get("/users/me", headers={"Authorization": credential})
        assert response.status_code == 401


def test_forged_tokens_are_refused_by_the_api(client: TestClient) -> None:
    sign_in(client)
    real = access_token(client)
    header, payload, _ = real.split(".")
    unsigned = f"{b64url({'alg': 'none', 'typ': 'JWT'})}.{payload}."
    other_secret = TokenIssuer("x" * 64, issuer=ISSUER, audience=AUDIENCE).issue(
        "ada@example.com", now=time.time(), session_id="s"
    )
    for forged in (unsigned, other_secret, f"{header}.{payload}.AAAA"):
        response = client.get("/users/me", headers=bearer(forged))
        assert response.status_code == 401
        assert response.json()["code"] == "invalid_token"


def test_a_token_without_a_session_is_refused(client: TestClient) -> None:
    sign_in(client)
    forged = issuer_for(JWT_SECRET, 15).issue("ada@example.com", now=time.time())
    response = client.get("/users/me", headers=bearer(forged))
    assert response.status_code == 401
    assert response.json()["code"] == "invalid_token"


def test_cors_lets_only_the_frontend_read_with_credentials(client: TestClient) -> None:
    preflight = client.options(
        "/users/me",
        headers={
            "Origin": "http://localhost:5173",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert preflight.headers["access-control-allow-origin"] == "http://localhost:5173"
    assert preflight.headers["access-control-allow-credentials"] == "true"
    evil = client.options(
        "/users/me",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
    )
    assert "access-control-allow-origin" not in evil.headers


def _cookie(response: httpx2.Response) -> str:
    value = response.cookies.get("am_refresh")
    assert value
    return value


def test_a_replay_within_the_grace_window_gets_the_same_successor(
    client: TestClient, app: FastAPI, clock: FrozenClock
) -> None:
    """Two tabs refreshing with one cookie agree on the next one: no second branch that
    would live on by itself."""
    sign_in(client)
    shared = refresh_value(client)
    first = refresh_with(app, shared)
    clock.advance(REUSE_GRACE_SECONDS / 2)
    second = refresh_with(app, shared)
    assert first.status_code == second.status_code == 200
    successor = _cookie(first)
    assert _cookie(second) == successor
    # The one successor rotates once; its own replay past the window ends the session.
    assert refresh_with(app, successor).status_code == 200
    clock.advance(REUSE_GRACE_SECONDS + 1)
    assert refresh_with(app, successor).json()["code"] == "refresh_token_reused"
    assert refresh_with(app, shared).status_code == 401
