"""Checks the fake Google itself over real HTTP, so app tests can trust what it checks."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest

# authlib ships no type information; the ignore stays harmless if a stub or override lands.
from authlib.oidc.core import CodeIDToken  # type: ignore[import-untyped,unused-ignore]
from joserfc import jwt
from joserfc.errors import BadSignatureError
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry

from tests.fakes.oidc import FakeGoogle, pkce_challenge, start_fake_google

REDIRECT_URI = "http://app.test/auth/google/callback"


@pytest.fixture
def google() -> Iterator[FakeGoogle]:
    with start_fake_google() as running:
        yield running


@pytest.fixture
def http() -> Iterator[httpx2.Client]:
    with httpx2.Client(timeout=5.0) as client:
        yield client


def authorize(http: httpx2.Client, google: FakeGoogle, verifier: str, nonce: str) -> str:
    """Run the authorize step as a browser would and return the code from the redirect."""
    response = http.get(
        google.authorization_endpoint,
        params={
            "client_id": google.client_id,
            "redirect_uri": REDIRECT_URI,
            "response_type": "code",
            "scope": "openid email profile",
            "state": "state-123",
            "nonce": nonce,
            "code_challenge": pkce_challenge(verifier),
            "code_challenge_method": "S256",
        },
    )
    assert response.status_code == 302, response.text
    location = urlsplit(response.headers["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT_URI
    query = parse_qs(location.query)
    assert query["state"] == ["state-123"]
    return query["code"][0]


def exchange(
    http: httpx2.Client, google: FakeGoogle, code: str, verifier: str, secret: str | None = None
) -> httpx2.Response:
    """Redeem a code with client_secret_basic, the method authlib uses by default."""
    credentials = f"{google.client_id}:{secret or google.client_secret}".encode()
    return http.post(
        google.token_endpoint,
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
        },
        headers={"Authorization": "Basic " + base64.b64encode(credentials).decode()},
    )


def verify_id_token(
    google: FakeGoogle, http: httpx2.Client, token: dict[str, Any], nonce: str
) -> dict[str, Any]:
    """Verify the way authlib's Starlette client does, plus the audience check it skips."""
    jwks = http.get(google.jwks_uri).json()
    decoded = jwt.decode(
        token["id_token"],
        KeySet.import_key_set(jwks),
        registry=JWSRegistry(algorithms=["RS256"]),
    )
    claims = CodeIDToken(
        decoded.claims,
        decoded.header,
        {"iss": {"values": [google.issuer]}, "aud": {"values": [google.client_id]}},
        {"nonce": nonce, "client_id": google.client_id, "access_token": token["access_token"]},
    )
    claims.validate()
    return dict(claims)


def test_discovery_advertises_endpoints_and_capabilities(
    google: FakeGoogle, http: httpx2.Client
) -> None:
    document = http.get(google.discovery_url).json()

    assert document["issuer"] == google.issuer
    assert document["authorization_endpoint"] == google.issuer + "/authorize"
    assert document["token_endpoint"] == google.issuer + "/token"
    assert document["jwks_uri"] == google.issuer + "/jwks"
    assert document["userinfo_endpoint"] == google.issuer + "/userinfo"
    assert document["response_types_supported"] == ["code"]
    assert document["id_token_signing_alg_values_supported"] == ["RS256"]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert set(document["token_endpoint_auth_methods_supported"]) == {
        "client_secret_post",
        "client_secret_basic",
    }
    assert {"openid", "email", "profile"} <= set(document["scopes_supported"])
    key = http.get(google.jwks_uri).json()["keys"][0]
    assert (key["kty"], key["use"], key["alg"]) == ("RSA", "sig", "RS256")
    assert "d" not in key  # only the public half is published


def test_round_trip_issues_verifiable_id_token_and_userinfo(
    google: FakeGoogle, http: httpx2.Client
) -> None:
    verifier, nonce = secrets.token_urlsafe(48), secrets.token_urlsafe(16)
    code = authorize(http, google, verifier, nonce)

    response = exchange(http, google, code, verifier)

    assert response.status_code == 200, response.text
    token = response.json()
    assert token["token_type"] == "Bearer"
    assert token["expires_in"] == 3600
    assert token["scope"] == "openid email profile"
    claims = verify_id_token(google, http, token, nonce)
    assert claims["nonce"] == nonce
    assert claims["sub"] == google.user["sub"]
    assert claims["email"] == "ada@example.com"
    assert claims["email_verified"] is True
    assert google.token_requests[-1]["code_verifier"] == verifier

    userinfo = http.get(
        google.userinfo_endpoint, headers={"Authorization": f"Bearer {token['access_token']}"}
    )
    assert userinfo.json() == google.user


def test_client_secret_post_is_accepted(google: FakeGoogle, http: httpx2.Client) -> None:
    verifier = secrets.token_urlsafe(48)
    code = authorize(http, google, verifier, "n")

    response = http.post(
        google.token_endpoint,
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
            "client_id": google.client_id,
            "client_secret": google.client_secret,
        },
    )

    assert response.status_code == 200, response.text


def test_code_is_single_use_and_replay_revokes_its_access_token(
    google: FakeGoogle, http: httpx2.Client
) -> None:
    verifier = secrets.token_urlsafe(48)
    code = authorize(http, google, verifier, "n")
    access_token = exchange(http, google, code, verifier).json()["access_token"]

    replay = exchange(http, google, code, verifier)

    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    userinfo = http.get(
        google.userinfo_endpoint, headers={"Authorization": f"Bearer {access_token}"}
    )
    assert userinfo.status_code == 401


def test_wrong_code_verifier_is_refused(google: FakeGoogle, http: httpx2.Client) -> None:
    code = authorize(http, google, secrets.token_urlsafe(48), "n")

    response = exchange(http, google, code, secrets.token_urlsafe(48))

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_wrong_client_secret_is_refused(google: FakeGoogle, http: httpx2.Client) -> None:
    verifier = secrets.token_urlsafe(48)
    code = authorize(http, google, verifier, "n")

    response = exchange(http, google, code, verifier, secret="not-the-secret")

    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    # Failed client authentication must not spend the code.
    assert exchange(http, google, code, verifier).status_code == 200


def test_authorize_without_pkce_is_refused(google: FakeGoogle, http: httpx2.Client) -> None:
    response = http.get(
        google.authorization_endpoint,
        params={
            "client_id": google.client_id,
            "redirect_uri": REDIRECT_URI,
            "response_type": "code",
            "scope": "openid email",
            "state": "s",
        },
    )

    assert response.status_code == 400


def test_sign_with_other_key_fails_jwks_verification(
    google: FakeGoogle, http: httpx2.Client
) -> None:
    google.sign_with_other_key = True
    verifier = secrets.token_urlsafe(48)
    token = exchange(http, google, authorize(http, google, verifier, "n"), verifier).json()

    with pytest.raises(BadSignatureError):
        verify_id_token(google, http, token, "n")


def test_knobs_shape_the_next_id_token(google: FakeGoogle, http: httpx2.Client) -> None:
    google.id_token_overrides = {"aud": "someone-else", "email": None}
    google.replay_nonce = "stolen-nonce"
    verifier = secrets.token_urlsafe(48)
    token = exchange(http, google, authorize(http, google, verifier, "fresh"), verifier).json()

    claims = jwt.decode(token["id_token"], KeySet.import_key_set(http.get(google.jwks_uri).json()))

    assert claims.claims["aud"] == "someone-else"
    assert claims.claims["azp"] == "someone-else"
    assert "email" not in claims.claims
    assert claims.claims["nonce"] == "stolen-nonce"
