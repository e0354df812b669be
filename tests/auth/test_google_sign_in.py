"""Google sign-in end to end: the app's authlib client against a real OpenID provider on
127.0.0.1, and every way a sign-in must be refused."""

import time
from http.cookies import Morsel, SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.auth import service
from api.auth.oauth import google_client
from api.auth.service import NonceReplayed
from api.config import Settings
from api.kit.clock import FrozenClock, SystemClock
from api.kit.tls import shared_ssl_context
from api.main import create_app
from api.repositories import Repositories
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from tests.auth.conftest import (
    FRONTEND,
    access_token,
    approve_at_google,
    bearer,
    browser,
    sign_in,
    start_login,
)
from tests.fakes.oidc import FakeGoogle


def refresh_cookie(response: httpx2.Response) -> Morsel[str] | None:
    for header in response.headers.get_list("set-cookie"):
        cookie = SimpleCookie(header)
        if "am_refresh" in cookie:
            return cookie["am_refresh"]
    return None


def auth_error(response: object) -> str | None:
    location = response.headers["location"]  # type: ignore[attr-defined]
    errors = parse_qs(urlsplit(location).query).get("auth_error")
    return errors[0] if errors else None


def test_sign_in_lands_on_the_frontend_with_a_refresh_cookie(
    client: TestClient, google: FakeGoogle
) -> None:
    response = sign_in(client, return_to="/agents?tab=memory")
    assert response.status_code == 302
    assert response.headers["location"] == f"{FRONTEND}/agents?tab=memory"
    cookie = refresh_cookie(response)
    assert cookie is not None
    assert cookie["httponly"]
    assert cookie["secure"]
    assert cookie["samesite"] == "strict"
    assert cookie["path"] == "/auth"
    me = client.get("/users/me", headers=bearer(access_token(client)))
    assert me.status_code == 200
    assert me.json() == {
        "email": "ada@example.com",
        "name": "Ada Lovelace",
        "picture": "https://example.com/ada.png",
    }
    # The code went back to Google with the PKCE verifier.
    assert google.token_requests[-1]["code_verifier"]


def test_the_login_redirect_carries_state_nonce_and_pkce(client: TestClient) -> None:
    query = parse_qs(urlsplit(start_login(client)).query)
    assert query["state"][0]
    assert query["nonce"][0]
    assert query["code_challenge"][0]
    assert query["code_challenge_method"] == ["S256"]
    assert "openid" in query["scope"][0]


def test_a_second_sign_in_updates_the_profile_and_keeps_the_user(
    client: TestClient, google: FakeGoogle, app: FastAPI
) -> None:
    sign_in(client)
    google.user = {**google.user, "name": "Countess Lovelace"}
    with browser(app) as other:
        sign_in(other)
        me = other.get("/users/me", headers=bearer(access_token(other))).json()
    assert me["name"] == "Countess Lovelace"
    assert me["email"] == "ada@example.com"


def test_a_bad_state_is_refused(client: TestClient) -> None:
    callback = approve_at_google(start_login(client))
    response = client.get(callback.replace("state=", "state=forged"))
    assert auth_error(response) == "invalid_state"
    assert refresh_cookie(response) is None


def test_a_callback_without_the_browsers_flow_cookie_is_refused(
    client: TestClient, app: FastAPI
) -> None:
    callback = approve_at_google(start_login(client))
    with browser(app) as attacker:  # login CSRF: someone else's callback in this browser
        assert auth_error(attacker.get(callback)) == "invalid_state"


@pytest.mark.parametrize(
    ("misbehave", "why"),
    [
        ({"id_token_overrides": {"aud": "someone-else", "azp": "test-client"}}, "audience"),
        (
            {"id_token_overrides": {"exp": int(time.time()) - 600, "iat": int(time.time()) - 4200}},
            "expired",
        ),
        ({"id_token_overrides": {"iss": "https://evil.example"}}, "issuer"),
        ({"sign_with_other_key": True}, "signature"),
        ({"replay_nonce": "nonce-of-an-earlier-sign-in"}, "nonce"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_bad_id_token_is_refused(
    client: TestClient, google: FakeGoogle, misbehave: dict[str, object], why: str
) -> None:
    for name, value in misbehave.items():
        setattr(google, name, value)
    response = sign_in(client)
    assert auth_error(response) == "invalid_id_token", why
    assert refresh_cookie(response) is None


async def test_a_nonce_is_accepted_once(settings: Settings) -> None:
    table = SqliteTable(settings.sqlite_path, settings.dynamodb_table, load_definition())
    repos = Repositories.over(table)
    await table.create()
    await service.remember_nonce(repos, "n-123", SystemClock())
    with pytest.raises(NonceReplayed):
        await service.remember_nonce(repos, "n-123", SystemClock())
    await table.close()


@pytest.mark.parametrize("verified", [False, "false", "true", None])
def test_an_email_not_verified_as_true_is_refused(
    client: TestClient, google: FakeGoogle, verified: object
) -> None:
    google.user = {**google.user, "email_verified": verified}
    assert auth_error(sign_in(client)) == "email_not_verified"


def test_a_replayed_sign_in_response_is_refused(client: TestClient, app: FastAPI) -> None:
    """The flow cookie is signed, not stored: replaying it with a fresh code from the same
    authorization request brings back the same nonce, which is accepted only once."""
    authorize_url = start_login(client)
    flow_cookie = client.cookies.get("am_oauth")
    assert flow_cookie
    assert refresh_cookie(client.get(approve_at_google(authorize_url))) is not None
    with browser(app) as replayer:
        replayer.cookies.set(
            "am_oauth", flow_cookie, domain="testserver.local", path="/auth/google"
        )
        response = replayer.get(approve_at_google(authorize_url))
    assert auth_error(response) == "nonce_replayed"
    assert refresh_cookie(response) is None


def test_the_callback_url_follows_public_url(settings: Settings, clock: FrozenClock) -> None:
    public = settings.model_copy(update={"public_url": "https://api.example.com"})
    with browser(create_app(public, clock=clock)) as client:
        query = parse_qs(urlsplit(start_login(client)).query)
    assert query["redirect_uri"] == ["https://api.example.com/auth/google/callback"]


def test_an_email_owned_by_another_google_account_is_not_handed_over(
    client: TestClient, google: FakeGoogle, app: FastAPI
) -> None:
    sign_in(client)
    google.user = {**google.user, "sub": "someone-else-999"}
    with browser(app) as other:
        assert auth_error(sign_in(other)) == "account_conflict"


def test_declining_at_google_returns_to_the_frontend(client: TestClient) -> None:
    start_login(client)
    response = client.get("/auth/google/callback", params={"error": "access_denied"})
    assert auth_error(response) == "access_denied"


@pytest.mark.parametrize(
    "return_to",
    [
        "https://evil.example/agents",
        "//evil.example/x",
        "/\\evil.example",
        "agents",
        "javascript:alert(1)",
        "http://localhost:5173.evil.example/",
        "/ok\r\nSet-Cookie: x",
    ],
)
def test_a_return_path_outside_the_frontend_is_refused(client: TestClient, return_to: str) -> None:
    response = client.get("/auth/google/login", params={"return_to": return_to})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_return_path"


def test_a_full_frontend_url_is_accepted_as_a_return_path(client: TestClient) -> None:
    response = sign_in(client, return_to=f"{FRONTEND}/settings#keys")
    assert response.headers["location"] == f"{FRONTEND}/settings#keys"


def test_every_sign_in_client_shares_the_one_tls_context(settings: Settings) -> None:
    """authlib makes an HTTP client per sign-in; none reads the CA bundle again."""
    google: Any = google_client(settings)
    first, second = google._get_oauth_client(), google._get_oauth_client()
    assert first is not second
    for client in (first, second):
        assert client._transport._pool._ssl_context is shared_ssl_context()
