"""Secrets are shown once, when created, and never again: not in later responses, not in
the logs of a whole sign-in and key lifecycle."""

import logging

import pytest
from fastapi import FastAPI

from tests.auth.conftest import JWT_SECRET, ORIGIN, access_token, bearer, browser, sign_in
from tests.fakes.oidc import FakeGoogle


def test_no_secret_reaches_the_logs_or_later_responses(
    app: FastAPI, google: FakeGoogle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, every level, the libraries' too
    later_bodies: list[str] = []
    secrets: list[str] = [google.client_secret, JWT_SECRET]
    with browser(app) as client:
        sign_in(client)
        secrets.append(client.cookies.get("am_refresh", path="/auth") or "")
        token = access_token(client)
        secrets += [token, client.cookies.get("am_refresh", path="/auth") or ""]
        created = client.post("/auth/api-keys", json={"name": "n8n"}, headers=bearer(token))
        key = created.json()["key"]
        secrets.append(key)
        later_bodies.append(client.get("/users/me", headers=bearer(key)).text)
        later_bodies.append(client.get("/auth/api-keys", headers=bearer(token)).text)
        key_id = created.json()["id"]
        client.delete(f"/auth/api-keys/{key_id}", headers=bearer(token))
        client.get("/users/me", headers=bearer(key))  # a revoked key, refused
        client.post("/auth/logout", headers=ORIGIN)
        client.post("/auth/refresh", headers=ORIGIN)  # after logout, refused
    assert all(secrets), "every secret was captured"
    logged = caplog.text
    assert len(caplog.records) > 0
    for secret in secrets:
        assert secret not in logged
        for body in later_bodies:
            assert secret not in body
