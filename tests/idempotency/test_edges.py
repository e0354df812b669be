"""What is not kept (server failures, answers too big), keys that are not keys, bodies over
the limit, CORS, and a store that fails while a key is claimed or settled: the app on
SQLite, with a few routes of the test's own."""

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.config import Settings
from api.errors import AppError
from api.http.middleware.idempotency import MAX_STORED_BODY_BYTES
from api.idempotency.models import CLAIM_SECONDS
from api.kit.clock import FrozenClock
from api.main import create_app
from api.store.definition import load_definition
from tests.idempotency.conftest import LOCAL, FailingStore, key, records


class Unavailable(AppError):
    status_code = 503
    code = "unavailable"


class Counted:
    """A route's calls, and what the next ones do: raise, or answer with their number."""

    def __init__(self) -> None:
        self.calls = 0
        self.failures: list[Exception] = []

    def __call__(self) -> dict[str, int]:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return {"call": self.calls}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        sqlite_path=tmp_path / "app.db", encryption_key="k" * 40, max_request_bytes=4096
    )


@pytest.fixture
def store(tmp_path: Path, clock: FrozenClock) -> FailingStore:
    return FailingStore(tmp_path / "store.db", "edges", load_definition(), clock=clock)


@pytest.fixture
def counted() -> Counted:
    return Counted()


@pytest.fixture
def app(settings: Settings, store: FailingStore, clock: FrozenClock, counted: Counted) -> FastAPI:
    app = create_app(settings, table=store, clock=clock)

    @app.post("/counted", status_code=201)
    async def count() -> dict[str, int]:
        return counted()

    @app.post("/big")
    async def big() -> dict[str, Any]:
        return {**counted(), "padding": "x" * MAX_STORED_BODY_BYTES}

    return app


@pytest.fixture
def client(app: FastAPI, store: FailingStore) -> Iterator[TestClient]:
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        yield client
    store.failing = frozenset()


def test_a_server_failure_is_not_kept(client: TestClient, counted: Counted) -> None:
    counted.failures = [RuntimeError("boom"), Unavailable("Try later.")]
    crashed = client.post("/counted", headers=key("flaky"))
    assert crashed.status_code == 500
    assert crashed.json()["code"] == "internal_error"
    assert records(client) == []
    unavailable = client.post("/counted", headers=key("flaky"))
    assert unavailable.status_code == 503
    assert unavailable.json()["code"] == "unavailable"
    assert records(client) == []
    done = client.post("/counted", headers=key("flaky"))
    assert (done.status_code, done.json()) == (201, {"call": 3})  # run each time
    again = client.post("/counted", headers=key("flaky"))
    assert (again.status_code, again.json()) == (201, {"call": 3})
    assert counted.calls == 3


def test_an_answer_too_big_to_keep_is_sent_whole_and_not_kept(
    client: TestClient, counted: Counted
) -> None:
    first = client.post("/big", headers=key("big"))
    assert first.status_code == 200
    assert first.json()["call"] == 1
    assert len(first.json()["padding"]) == MAX_STORED_BODY_BYTES
    assert records(client) == []
    second = client.post("/big", headers=key("big"))
    assert second.json()["call"] == 2
    assert "idempotent-replayed" not in second.headers


@pytest.mark.parametrize(
    "value",
    ["", '""', "x" * 256, "caf\u00e9", "tab\there", "a\x7f"],
    ids=["empty", "empty-quoted", "too-long", "not-ascii", "tab", "del"],
)
def test_a_key_that_is_not_one_is_refused(client: TestClient, counted: Counted, value: str) -> None:
    refused = client.post("/counted", headers={b"Idempotency-Key": value.encode("latin-1")})
    assert refused.status_code == 400, value
    assert refused.json()["code"] == "invalid_idempotency_key"
    assert "printable ASCII" in refused.json()["message"]
    assert counted.calls == 0


def test_two_keys_are_refused(client: TestClient, counted: Counted) -> None:
    refused = client.post(
        "/counted", headers=[("Idempotency-Key", "one"), ("Idempotency-Key", "two")]
    )
    assert refused.status_code == 400
    assert refused.json()["code"] == "invalid_idempotency_key"
    assert "one Idempotency-Key header" in refused.json()["message"]
    assert counted.calls == 0


def test_a_key_is_the_same_quoted_or_not(client: TestClient, counted: Counted) -> None:
    longest = "k" * 255
    assert client.post("/counted", headers=key(longest)).json() == {"call": 1}
    assert client.post("/counted", headers=key(f'"{longest}"')).json() == {"call": 1}
    assert client.post("/counted", headers=key('"with space"')).json() == {"call": 2}
    assert client.post("/counted", headers=key("with space")).json() == {"call": 2}


def test_a_body_over_the_limit_is_refused_before_anything_is_claimed(
    client: TestClient, counted: Counted
) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield b"x" * 1000

    refused = client.post("/counted", content=chunks(), headers=key("chunked"))
    assert refused.status_code == 413
    assert refused.json()["code"] == "payload_too_large"
    assert records(client) == []
    assert counted.calls == 0


def test_a_replay_carries_cors_headers(client: TestClient, settings: Settings) -> None:
    origin = {"Origin": settings.frontend_origin, **key("cors")}
    client.post("/counted", headers=origin)
    replayed = client.post("/counted", headers=origin)
    assert replayed.headers["idempotent-replayed"] == "true"
    assert replayed.headers["access-control-allow-origin"] == settings.frontend_origin
    assert "idempotent-replayed" in replayed.headers["access-control-expose-headers"].lower()
    refused = client.post("/counted", headers={**origin, "Idempotency-Key": ""})
    assert refused.status_code == 400
    assert refused.headers["access-control-allow-origin"] == settings.frontend_origin
    preflight = client.options(
        "/counted",
        headers={
            "Origin": settings.frontend_origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "idempotency-key",
        },
    )
    assert preflight.status_code == 200
    assert "idempotency-key" in preflight.headers["access-control-allow-headers"].lower()


def test_a_store_that_cannot_claim_runs_nothing(
    client: TestClient, store: FailingStore, counted: Counted
) -> None:
    store.failing = frozenset({"claim"})
    refused = client.post("/counted", headers=key("no-claim"))
    assert refused.status_code == 503
    assert refused.json()["code"] == "store_throttled"
    assert "the test fails" not in refused.text  # the engine's words stay in the log
    assert counted.calls == 0


def test_an_answer_that_cannot_be_stored_still_reaches_the_client(
    client: TestClient, store: FailingStore, counted: Counted, caplog: pytest.LogCaptureFixture
) -> None:
    store.failing = frozenset({"settle"})
    with caplog.at_level(logging.WARNING, logger="api.http.middleware.idempotency"):
        first = client.post("/counted", headers=key("unstored"))
    assert (first.status_code, first.json()) == (201, {"call": 1})
    assert "storing the answer to an Idempotency-Key failed" in caplog.text
    assert records(client) == []  # freed: nothing to replay, and nothing left claimed
    store.failing = frozenset()
    assert client.post("/counted", headers=key("unstored")).json() == {"call": 2}


def test_a_store_that_cannot_tell_the_caller_runs_nothing(
    client: TestClient, store: FailingStore, counted: Counted
) -> None:
    store.failing = frozenset({"user"})  # the local user is made on the first request
    refused = client.post("/counted", headers=key("who"))
    assert refused.status_code == 503
    assert refused.json()["code"] == "store_throttled"
    assert counted.calls == 0
    store.failing = frozenset()
    assert client.post("/counted", headers=key("who")).json() == {"call": 1}


def test_a_claim_that_cannot_be_freed_frees_itself_when_it_lapses(
    client: TestClient,
    store: FailingStore,
    counted: Counted,
    clock: FrozenClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store.failing = frozenset({"release"})
    counted.failures = [Unavailable("Try later.")]
    with caplog.at_level(logging.WARNING, logger="api.http.middleware.idempotency"):
        assert client.post("/counted", headers=key("stuck")).status_code == 503
    assert "freeing an Idempotency-Key failed" in caplog.text
    busy = client.post("/counted", headers=key("stuck"))
    assert busy.status_code == 409
    assert busy.json()["code"] == "idempotency_request_in_progress"
    clock.advance(CLAIM_SECONDS)
    assert client.post("/counted", headers=key("stuck")).json() == {"call": 2}


def test_a_key_on_a_method_no_route_takes_changes_nothing(
    client: TestClient, counted: Counted
) -> None:
    """The app's 405 and 404 stand whatever the key: no record is claimed for them, so a
    key reused on one is not a 422 either."""
    assert client.post("/counted", headers=key("reused")).status_code == 201
    for _ in range(2):
        wrong = client.put("/counted", headers=key("reused"))
        assert wrong.status_code == 405, wrong.text
        assert wrong.headers["allow"] == "POST"
        missing = client.post("/nowhere", headers=key("reused"))
        assert missing.status_code == 404, missing.text
    assert [r.status for r in records(client)] == [201]
    assert counted.calls == 1
