"""Requests bigger than the service takes are refused before they are read."""

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app
from tests.fakes import serving

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


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A real server taking bodies of 4096 bytes at most; its port."""
    db = tmp_path_factory.mktemp("limits") / "l.db"
    env = {"SQLITE_PATH": str(db), "MAX_REQUEST_BYTES": "4096", "ENCRYPTION_KEY": "k" * 40}
    with serving.server_process(env) as server:
        yield server.port


def send_whole_then_read(port: int, head: bytes, body: bytes) -> bytes:
    """As most clients do: the whole request sent, then the answer read."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_a_client_that_sends_its_whole_body_first_reads_the_413(small_server: int) -> None:
    body = b'{"name": "' + b"x" * 2_000_000 + b'"}'
    head = (
        b"POST /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    )
    answer = send_whole_then_read(small_server, head, body)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b'"payload_too_large"' in answer


def test_a_chunked_body_sent_whole_first_reads_the_413_too(small_server: int) -> None:
    chunks = b"".join(b"%x\r\n%s\r\n" % (10_000, b"x" * 10_000) for _ in range(200))
    head = (
        b"POST /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    answer = send_whole_then_read(small_server, head, chunks + b"0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
