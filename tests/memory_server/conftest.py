"""Seed 002's API over HTTP, in both auth modes: `api` is a client of the local server (no
login) or of the SaaS app (AUTH_MODE=google) holding only an API key, as a machine client
such as the seed's `learning()` would."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.main import create_app
from tests.auth.conftest import JWT_SECRET, access_token, bearer, browser, google, sign_in
from tests.contract.conftest import engine, table
from tests.fakes.oidc import FakeGoogle
from tests.runtime.conftest import running

__all__ = ["engine", "google", "table"]

MODES = ["local", "google"]


def local_settings(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(sqlite_path=tmp_path / "seed002.db", encryption_key="k" * 40, **overrides)


def google_settings(tmp_path: Path, google: FakeGoogle, **overrides: Any) -> Settings:
    return Settings(
        store="sqlite",
        sqlite_path=tmp_path / "saas.db",
        auth_mode="google",
        public_url="https://testserver",
        jwt_secret=JWT_SECRET,
        encryption_key="e" * 40,
        google_client_id=google.client_id,
        google_client_secret=google.client_secret,
        google_discovery_url=google.discovery_url,
        frontend_url="http://localhost:5173",
        **overrides,
    )


def with_api_key(client: TestClient) -> TestClient:
    """`client`, signed in once to make an API key, then holding only that key."""
    sign_in(client)
    made = client.post(
        "/auth/api-keys", json={"name": "seed002"}, headers=bearer(access_token(client))
    )
    assert made.status_code == 201, made.text
    client.cookies.clear()
    client.headers["Authorization"] = f"Bearer {made.json()['key']}"
    return client


def serve(
    mode: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock, **overrides: Any
) -> Iterator[TestClient]:
    if mode == "local":
        with running(local_settings(tmp_path, **overrides), clock) as client:
            yield client
        return
    fake: FakeGoogle = request.getfixturevalue("google")
    app = create_app(google_settings(tmp_path, fake, **overrides), clock=clock)
    with browser(app) as client:
        yield with_api_key(client)


@pytest.fixture(params=MODES)
def api(request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    yield from serve(request.param, request, tmp_path, clock)


@pytest.fixture
def local(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    with running(local_settings(tmp_path), clock) as client:
        yield client


def new_agent(client: TestClient, name: str = "my_agent", **fields: Any) -> dict[str, Any]:
    created = client.post("/agents", json={"name": name, **fields})
    assert created.status_code == 201, created.text
    agent: dict[str, Any] = created.json()
    return agent


def post_message(
    client: TestClient, clock: FrozenClock, content: str, *, agent: str = "my_agent", **fields: Any
) -> dict[str, Any]:
    """A message stored through seed 002's POST /messages; the clock moves on a second."""
    clock.advance(1)
    body = {"agent_name": agent, "role": "user", "content": content, **fields}
    stored = client.post("/messages", json=body)
    assert stored.status_code == 201, stored.text
    message: dict[str, Any] = stored.json()
    return message


def refused(response: Any, status: int, code: str) -> None:
    """An error in our convention: the status and a stable code with a message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code, body
    assert body["message"]
