"""An app in google mode, signed in through the fake Google over real HTTP."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.main import create_app
from tests.fakes.oidc import FakeGoogle, start_fake_google
from tests.fakes.serving import LOCAL

FRONTEND = "http://localhost:5173"
JWT_SECRET = "j" * 64
ORIGIN = {"Origin": FRONTEND}


@pytest.fixture
def google() -> Iterator[FakeGoogle]:
    with start_fake_google() as fake:
        yield fake


@pytest.fixture
def settings(tmp_path: Path, google: FakeGoogle) -> Settings:
    return google_mode(tmp_path, google)


def google_mode(directory: Path, google: FakeGoogle) -> Settings:
    """The SaaS app's settings, signing in through `google`, its store in `directory`."""
    return Settings(
        store="sqlite",
        sqlite_path=directory / "auth.db",
        auth_mode="google",
        public_url="https://testserver",
        jwt_secret=JWT_SECRET,
        encryption_key="e" * 40,
        google_client_id=google.client_id,
        google_client_secret=google.client_secret,
        google_discovery_url=google.discovery_url,
        frontend_url=FRONTEND,
    )


@pytest.fixture
def app(settings: Settings, clock: FrozenClock) -> FastAPI:
    return create_app(settings, clock=clock)


def browser(app: FastAPI) -> TestClient:
    """A browser on https (the cookies are Secure), with its own cookie jar."""
    return TestClient(app, base_url="https://testserver", follow_redirects=False)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with browser(app) as client:
        yield client


def start_login(client: TestClient, **params: str) -> str:
    """The URL at Google that the app sends the browser to."""
    response = client.get("/auth/google/login", params=params)
    assert response.status_code == 302, response.text
    return response.headers["location"]


def approve_at_google(authorize_url: str) -> str:
    """What Google answers: the callback URL with a code and the state."""
    response = LOCAL.get(authorize_url, follow_redirects=False)
    assert response.status_code == 302, response.text
    return response.headers["location"]


def sign_in(client: TestClient, **params: str) -> httpx2.Response:
    return client.get(approve_at_google(start_login(client, **params)))


def access_token(client: TestClient) -> str:
    response = client.post("/auth/refresh", headers=ORIGIN)
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def as_user(google: FakeGoogle, sub: str, email: str, **extra: Any) -> None:
    google.user = {**google.user, "sub": sub, "email": email, "name": email.split("@")[0], **extra}
