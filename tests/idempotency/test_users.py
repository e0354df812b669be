"""Keys belong to their user, sign-in routes are never replayed, and a caller who is not
signed in is answered by the app: the SaaS app (AUTH_MODE=google) with the fake Google."""

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.auth.conftest import (
    ORIGIN,
    access_token,
    app,
    as_user,
    bearer,
    browser,
    google,
    settings,
    sign_in,
)
from tests.fakes.oidc import FakeGoogle
from tests.idempotency.conftest import key, records

__all__ = ["app", "google", "settings"]  # the google-mode app, for this module's tests


@pytest.fixture
def ada(app: FastAPI, google: FakeGoogle) -> Iterator[TestClient]:
    with browser(app) as client:
        as_user(google, "1111", "ada@example.com")
        sign_in(client)
        client.headers.update(bearer(access_token(client)))
        yield client


@pytest.fixture
def bob(app: FastAPI, google: FakeGoogle, ada: TestClient) -> Iterator[TestClient]:
    with browser(app) as client:
        as_user(google, "2222", "bob@example.com")
        sign_in(client)
        client.headers.update(bearer(access_token(client)))
        yield client


def test_the_same_key_of_two_users_is_two_keys(ada: TestClient, bob: TestClient) -> None:
    mine = ada.post("/agents", json={"name": "Helper"}, headers=key("shared"))
    theirs = bob.post("/agents", json={"name": "Other"}, headers=key("shared"))
    assert mine.status_code == theirs.status_code == 201, theirs.text
    assert "idempotent-replayed" not in theirs.headers
    assert theirs.json()["name"] == "Other"
    assert [a["name"] for a in bob.get("/agents").json()] == ["Other"]
    # Each replays their own.
    again = bob.post("/agents", json={"name": "Other"}, headers=key("shared"))
    assert (again.content, again.headers["idempotent-replayed"]) == (theirs.content, "true")
    assert sorted(r.email for r in records(ada)) == ["ada@example.com", "bob@example.com"]


def test_an_api_key_client_gets_replays_too(ada: TestClient) -> None:
    created = ada.post("/auth/api-keys", json={"name": "script"})
    assert created.status_code == 201, created.text
    script = {"Authorization": f"Bearer {created.json()['key']}", **key("from-script")}
    first = ada.post("/agents", json={"name": "Scripted"}, headers=script)
    again = ada.post("/agents", json={"name": "Scripted"}, headers=script)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.headers["idempotent-replayed"] == "true"
    assert again.content == first.content


def test_sign_in_routes_are_never_replayed(ada: TestClient) -> None:
    made = [ada.post("/auth/api-keys", json={"name": "k"}, headers=key("same")) for _ in range(2)]
    assert [m.status_code for m in made] == [201, 201]
    assert made[0].json()["id"] != made[1].json()["id"]  # two keys: each request ran
    # Each refresh rotates the cookie; a replayed one would leave the browser holding a
    # refresh token already used, and the third refresh would be refused as a reuse.
    for _ in range(2):
        refreshed = ada.post("/auth/refresh", headers={**ORIGIN, **key("refresh")})
        assert refreshed.status_code == 200, refreshed.text
        assert "idempotent-replayed" not in refreshed.headers
    assert ada.post("/auth/refresh", headers=ORIGIN).status_code == 200
    assert records(ada) == []


def test_a_caller_not_signed_in_is_answered_by_the_app(app: FastAPI, ada: TestClient) -> None:
    with browser(app) as anonymous:
        refused = anonymous.post("/agents", json={"name": "X"}, headers=key("anon"))
        assert refused.status_code == 401
        assert refused.json()["code"] == "not_authenticated"
        bad = {"Authorization": "Bearer amk_not-a-key", **key("anon")}
        assert anonymous.post("/agents", json={"name": "X"}, headers=bad).status_code == 401
    assert records(ada) == []
