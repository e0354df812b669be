"""Requests bigger than the service takes are refused before they are read."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app

LOCAL = "http://127.0.0.1"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(sqlite_path=tmp_path / "l.db", max_request_bytes=4096)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        yield client


def test_a_body_over_the_limit_is_refused_by_its_length(client: TestClient) -> None:
    big = client.post("/agents", json={"name": "Big", "persona": "x" * 5000})
    assert big.status_code == 413
    assert big.json()["code"] == "payload_too_large"
    assert client.get("/agents").json() == []
    fits = client.post("/agents", json={"name": "Fits", "metadata": {"notes": "x" * 3000}})
    assert fits.status_code == 201


def test_a_chunked_body_is_cut_off_at_the_limit(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"name": "Chunked", "persona": "'
        for _ in range(10):
            yield b"x" * 1000
        yield b'"}'

    refused = client.post("/agents", content=chunks(), headers={"content-type": "application/json"})
    assert refused.status_code == 413
    assert refused.json()["code"] == "payload_too_large"
    assert client.get("/agents").json() == []


def test_a_length_that_is_not_a_number_is_refused(client: TestClient) -> None:
    refused = client.post("/agents", content=b"{}", headers={"content-length": "-1"})
    assert refused.status_code == 413
    assert refused.json()["code"] == "payload_too_large"


def test_too_many_headers_are_refused(client: TestClient) -> None:
    headers = {f"x-padding-{i}": "y" for i in range(120)}
    refused = client.get("/agents", headers=headers)
    assert refused.status_code == 431
    assert refused.json()["code"] == "request_headers_too_large"


def test_the_limit_comes_before_sign_in(tmp_path: Path) -> None:
    settings = Settings(
        sqlite_path=tmp_path / "g.db",
        auth_mode="google",
        public_url="https://api.example.com",
        jwt_secret="j" * 40,
        encryption_key="k" * 40,
        google_client_id="client",
        google_client_secret="secret",
        frontend_url="https://app.example.com",
    )
    with TestClient(create_app(settings), base_url="https://api.example.com") as client:
        anonymous = client.post("/chat", content=b"x" * 2_000_000)
        assert anonymous.status_code == 413
        assert client.post("/chat", json={"prompt": "hi"}).status_code == 401
