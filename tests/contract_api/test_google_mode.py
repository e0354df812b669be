"""The contract in google mode, where sign-in applies: every operation of the document,
called without credentials, then with an API key (on paths naming nothing), answers a
status its operation documents, and an error in the shape documented for it."""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app
from tests.auth.conftest import FRONTEND, JWT_SECRET, access_token, bearer, browser, sign_in
from tests.fakes.oidc import start_fake_google


@pytest.fixture(scope="module")
def google_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    directory: Path = tmp_path_factory.mktemp("google")
    with start_fake_google() as google:
        settings = Settings(
            store="sqlite",
            sqlite_path=directory / "google.db",
            auth_mode="google",
            public_url="https://testserver",
            jwt_secret=JWT_SECRET,
            encryption_key="e" * 40,
            google_client_id=google.client_id,
            google_client_secret=google.client_secret,
            google_discovery_url=google.discovery_url,
            frontend_url=FRONTEND,
            memory_embedding_backend="none",
        )
        with browser(create_app(settings)) as client:
            yield client


def calls(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in doc["paths"].items():
        for method, operation in methods.items():
            yield method.upper(), re.sub(r"{\w+}", "nothing-here", path), operation


def check(method: str, path: str, operation: dict[str, Any], answer: Any) -> int:
    status: int = answer.status_code
    assert str(status) in operation["responses"], f"{method} {path}: {status} {answer.text}"
    if status >= 400:
        body = answer.json()
        error = body["error"] if path.startswith("/v1/") and "error" in body else body
        assert error["request_id"] == answer.headers["X-Request-ID"], f"{method} {path}"
        assert error["code"], f"{method} {path}"
    return status


def test_without_credentials_every_answer_is_documented(google_client: TestClient) -> None:
    doc = google_client.get("/openapi.json").json()
    seen: list[int] = []
    for method, path, operation in calls(doc):
        if path.startswith("/auth/google/"):
            continue  # sign-in itself: redirects, exercised by tests/auth
        answer = google_client.request(method, path, json={} if method != "GET" else None)
        seen.append(check(method, path, operation, answer))
    assert seen.count(401) > 40


def test_with_an_api_key_every_answer_is_documented(google_client: TestClient) -> None:
    sign_in(google_client)
    token = access_token(google_client)
    created = google_client.post("/auth/api-keys", json={"name": "contract"}, headers=bearer(token))
    assert created.status_code == 201, created.text
    key = bearer(created.json()["key"])
    doc = google_client.get("/openapi.json").json()
    seen: list[int] = []
    for method, path, operation in calls(doc):
        if path.startswith("/auth/google/") or path == "/auth/refresh" or path == "/auth/logout":
            continue  # the browser's cookie flow, not an API key's
        answer = google_client.request(
            method, path, json={} if method != "GET" else None, headers=key
        )
        seen.append(check(method, path, operation, answer))
    assert 401 not in seen
    assert 403 in seen  # session_required: an API key cannot manage API keys
    assert 404 in seen
