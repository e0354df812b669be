"""Every request has an id: the client's X-Request-ID when well-formed, a new one otherwise.
It comes back in the header of every answer (errors, refusals, streams, replays), in the
body of every error, and in the log lines the request wrote, as text or as JSON."""

import json
import logging
import re
from io import StringIO

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError

from api.config import Settings
from api.observability import logs
from tests.observability.conftest import loopback_client

MADE = re.compile(r"[0-9a-f]{32}")


def test_a_well_formed_id_is_kept(client: TestClient) -> None:
    for sent in ("abc-123", "0f8fad5b-d9cb-469f-a165-70867728950e", "req.7_X", "x" * 128):
        response = client.get("/health", headers={"X-Request-ID": sent})
        assert response.headers["X-Request-ID"] == sent


@pytest.mark.parametrize(
    "sent",
    [b"", b"has space", b"x" * 129, b"semi;colon", "ünïcode".encode(), b"a/b", b"-", b".dot"],
)
def test_any_other_id_is_replaced(client: TestClient, sent: bytes) -> None:
    response = client.get("/health", headers={b"X-Request-ID": sent})
    assert MADE.fullmatch(response.headers["X-Request-ID"])


def test_every_request_gets_its_own(client: TestClient) -> None:
    ids = {client.get("/health").headers["X-Request-ID"] for _ in range(3)}
    assert len(ids) == 3
    assert all(MADE.fullmatch(i) for i in ids)


def test_errors_carry_it_in_body_and_header(app: FastAPI) -> None:
    @app.get("/_test/crash")
    async def crash() -> None:
        raise RuntimeError("secret internals")

    with loopback_client(app) as client:
        answers = {
            "app error": client.get("/agents/missing", headers={"X-Request-ID": "r-404"}),
            "no route": client.get("/nowhere", headers={"X-Request-ID": "r-route"}),
            "validation": client.post("/agents", json={}, headers={"X-Request-ID": "r-422"}),
            "too large": client.post(
                "/agents",
                content=b"x" * 2_000_000,
                headers={"X-Request-ID": "r-413", "Content-Type": "application/json"},
            ),
            "crash": client.get("/_test/crash", headers={"X-Request-ID": "r-500"}),
            "host": client.get(
                "/health", headers={"X-Request-ID": "r-host", "Host": "evil.example"}
            ),
        }
    expected = {
        "app error": (404, "agent_not_found", "r-404"),
        "no route": (404, "not_found", "r-route"),
        "validation": (422, "validation_error", "r-422"),
        "too large": (413, "payload_too_large", "r-413"),
        "crash": (500, "internal_error", "r-500"),
        "host": (403, "host_rejected", "r-host"),
    }
    for what, response in answers.items():
        status, code, request_id = expected[what]
        assert response.status_code == status, what
        assert response.json()["code"] == code, what
        assert response.json()["request_id"] == request_id, what
        assert response.headers["X-Request-ID"] == request_id, what
        assert response.json()["message"], what


def test_streams_and_replays_carry_it(client: TestClient) -> None:
    agent = client.post("/agents", json={"name": "Kit"}).json()["id"]
    body = {"agent_id": agent, "prompt": "Hello there."}
    headers = {"Idempotency-Key": "turn-1", "X-Request-ID": "first"}
    with client.stream("POST", "/chat", json=body, headers=headers) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.headers["X-Request-ID"] == "first"
        "".join(stream.iter_text())
    again = client.post("/chat", json=body, headers={**headers, "X-Request-ID": "retry"})
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["X-Request-ID"] == "retry"


def test_cors_exposes_it(client: TestClient, settings: Settings) -> None:
    response = client.get("/health", headers={"Origin": settings.frontend_origin})
    assert "X-Request-ID" in response.headers["Access-Control-Expose-Headers"]


def test_the_log_lines_of_a_failing_request_carry_it(app: FastAPI, log_lines: StringIO) -> None:
    @app.get("/_test/crash")
    async def crash() -> None:
        raise RuntimeError("secret internals")

    with loopback_client(app) as client:
        missing = client.get("/agents/missing", headers={"X-Request-ID": "req-missing"})
        crashed = client.get("/_test/crash", headers={"X-Request-ID": "req-crash"})
    assert missing.json()["request_id"] == "req-missing"
    assert crashed.json()["request_id"] == "req-crash"
    lines = log_lines.getvalue().splitlines()
    assert "INFO api.access [req-missing]: GET /agents/missing 404 " in "\n".join(lines)
    crash_lines = [line for line in lines if "[req-crash]" in line]
    assert any(line.startswith("ERROR api.http.errors [req-crash]:") for line in crash_lines)
    assert any(
        line.startswith("INFO api.access [req-crash]: GET /_test/crash 500 ")
        for line in crash_lines
    )
    # Outside a request, a line says so.
    assert any("[-]" in line for line in lines)  # start-up's "store ready"


def test_json_log_lines_carry_it_with_the_request_fields(app: FastAPI, log_lines: StringIO) -> None:
    logs.configure("info", "json", log_lines)
    with loopback_client(app) as client:
        client.get("/agents/missing", headers={"X-Request-ID": "req-json"})
    lines = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    access = [line for line in lines if line["logger"] == "api.access"]
    assert len(access) == 1
    line = access[0]
    assert line["request_id"] == "req-json"
    assert line["level"] == "info"
    assert line["method"] == "GET"
    assert line["path"] == "/agents/missing"
    assert line["route"] == "/agents/{agent_id}"
    assert line["status"] == 404
    assert line["duration_ms"] > 0
    assert line["message"].startswith("GET /agents/missing 404 ")
    assert line["time"].endswith("+00:00")
    started = [line for line in lines if line["message"].startswith("store ready")]
    assert started
    assert started[0]["request_id"] is None


def test_a_crash_logs_its_traceback_in_json(app: FastAPI, log_lines: StringIO) -> None:
    @app.get("/_test/crash")
    async def crash() -> None:
        raise RuntimeError("secret internals")

    logs.configure("info", "json", log_lines)
    with loopback_client(app) as client:
        client.get("/_test/crash", headers={"X-Request-ID": "req-trace"})
    lines = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    [error] = [line for line in lines if line["level"] == "error"]
    assert error["request_id"] == "req-trace"
    assert "RuntimeError: secret internals" in error["exception"]


def test_log_format_is_a_setting(
    settings: Settings,
    log_lines: StringIO,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert settings.log_format == "text"
    monkeypatch.setenv("LOG_FORMAT", "json")
    from_env = settings.model_validate({**settings.model_dump(exclude={"log_format"})})
    assert from_env.log_format == "json"
    with pytest.raises(ValidationError, match="log_format"):
        Settings(log_format="yaml")
    # What a served app does with it (uvicorn's `api.main:app`, `api.cli serve`): its one
    # handler now writes JSON to stderr, in place of the text one.
    logs.configure_logging(from_env)
    logging.getLogger("test.format").warning("written as %s", "json")
    [line] = [json.loads(text) for text in capsys.readouterr().err.splitlines()]
    assert (line["level"], line["logger"], line["message"]) == (
        "warning",
        "test.format",
        "written as json",
    )
    assert log_lines.getvalue() == ""
