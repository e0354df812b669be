"""Streamed turns, the `resume` hook, and claims kept alive or lost: the middleware on a tiny
app of the test's own (the app's lifespan state, in local mode, over a real SQLite file)."""

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI, Response
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.testclient import TestClient
from starlette.background import BackgroundTask
from starlette.types import Message, Receive, Scope, Send

from api.config import Settings
from api.errors import NotFound
from api.http import errors as error_handlers
from api.http.middleware.idempotency import Idempotency, Resume
from api.idempotency.models import CLAIM_SECONDS
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Table
from api.users.service import LocalIdentity
from tests.fakes.serving import serve_in_thread
from tests.idempotency.conftest import LOCAL, FailingStore, key, records

EMAIL = "local@localhost"
RUN_ID = "run-7"


class Turns:
    """What the tiny app's routes did, and a gate that holds them while closed."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.opened.set()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Routes wait inside the block; on the way out (failing or not) they are let go
        before the requests they hold are waited for."""
        self.opened.clear()
        try:
            yield
        finally:
            self.opened.set()

    async def wait(self) -> None:
        self.entered.set()
        await asyncio.to_thread(self.opened.wait)  # a worker thread waits, not the loop

    async def events(self) -> AsyncIterator[bytes]:
        yield b"event: run.started\ndata: {}\n\n"
        await self.wait()
        yield b"event: run.completed\ndata: {}\n\n"


class FakeResume:
    """The hook GET /runs/{id}/events will provide: what it was asked, and a stream."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []

    async def __call__(self, scope: Scope, email: str, run_id: str) -> Response:
        self.asked.append((scope["path"], email, run_id))
        return StreamingResponse(iter([b"event: resumed\n\n"]), media_type="text/event-stream")


def tiny_app(
    table: Table, clock: FrozenClock, turns: Turns, resume: Resume | None, **knobs: Any
) -> FastAPI:
    settings = Settings(sqlite_path=Path("unused.db"), local_user_email=EMAIL)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        await table.create()
        yield {
            "table": table,
            "repos": Repositories.over(table),
            "settings": settings,
            "clock": clock,
            "local": LocalIdentity(EMAIL),
            "token_issuer": None,
        }

    app = FastAPI(lifespan=lifespan)
    error_handlers.install(app)
    app.add_middleware(Idempotency, resume=resume, **knobs)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/turn")
    async def turn() -> StreamingResponse:
        turns.calls += 1
        headers = {"Run-Id": RUN_ID}
        return StreamingResponse(turns.events(), media_type="text/event-stream", headers=headers)

    @app.post("/unnamed-turn")
    async def unnamed_turn() -> StreamingResponse:
        turns.calls += 1
        return StreamingResponse(turns.events(), media_type="text/event-stream")

    @app.post("/slow", status_code=201)
    async def slow() -> dict[str, int]:
        turns.calls += 1
        call = turns.calls
        await turns.wait()
        return {"call": call}

    @app.post("/then-more")
    async def then_more(status: int) -> JSONResponse:
        """Answers, then goes on working (a background task held by the gate)."""
        turns.calls += 1
        body = {"call": turns.calls}
        return JSONResponse(body, status_code=status, background=BackgroundTask(turns.wait))

    @app.post("/headers", status_code=201)
    async def headers() -> Response:
        turns.calls += 1
        return Response(
            b"made",
            status_code=201,
            media_type="text/plain",
            headers={
                "ETag": '"v1"',
                "Location": "/things/1",
                "Run-Id": "run-9",
                "Set-Cookie": "session=secret",
                "X-Other": "not kept",
            },
        )

    return app


@pytest.fixture
def table(tmp_path: Path, clock: FrozenClock) -> Iterator[Table]:
    table = SqliteTable(tmp_path / "tiny.db", "tiny", load_definition(), clock=clock)
    yield table
    asyncio.run(table.close())


@pytest.fixture
def turns() -> Turns:
    return Turns()


@pytest.fixture
def resume() -> FakeResume:
    return FakeResume()


def client_for(app: FastAPI) -> TestClient:
    return TestClient(app, base_url=LOCAL)


def test_a_retried_turn_re_attaches_to_its_run(
    table: Table, clock: FrozenClock, turns: Turns, resume: FakeResume
) -> None:
    with client_for(tiny_app(table, clock, turns, resume)) as client:
        first = client.post("/turn", json={"prompt": "hi"}, headers=key("turn"))
        assert first.status_code == 200
        assert "run.completed" in first.text
        (record,) = records(client)
        assert (record.state, record.run_id, record.body) == ("stream", RUN_ID, b"")

        again = client.post("/turn", json={"prompt": "hi"}, headers=key("turn"))
        assert again.status_code == 200
        assert again.text == "event: resumed\n\n"
        assert again.headers["idempotent-replayed"] == "true"
        assert resume.asked == [("/turn", EMAIL, RUN_ID)]
        assert turns.calls == 1
        other = client.post("/turn", json={"prompt": "bye"}, headers=key("turn"))
        assert other.status_code == 422
        assert other.json()["code"] == "idempotency_key_reused"


def test_without_a_resume_hook_a_retried_turn_is_told_its_run(
    table: Table, clock: FrozenClock, turns: Turns
) -> None:
    with client_for(tiny_app(table, clock, turns, None)) as client:
        assert client.post("/turn", headers=key("turn")).status_code == 200
        again = client.post("/turn", headers=key("turn"))
        assert again.status_code == 409
        assert again.json()["code"] == "idempotency_request_in_progress"
        assert RUN_ID in again.json()["message"]
        assert turns.calls == 1


def test_a_run_the_hook_cannot_find_is_its_error(
    table: Table, clock: FrozenClock, turns: Turns
) -> None:
    async def lost(scope: Scope, email: str, run_id: str) -> Response:
        raise NotFound(f"Run {run_id} is not known here.")

    with client_for(tiny_app(table, clock, turns, lost)) as client:
        assert client.post("/turn", headers=key("turn")).status_code == 200
        again = client.post("/turn", headers=key("turn"))
        assert again.status_code == 404
        assert again.json() == {"code": "not_found", "message": f"Run {RUN_ID} is not known here."}


def test_a_stream_without_a_run_is_not_kept(
    table: Table, clock: FrozenClock, turns: Turns, resume: FakeResume
) -> None:
    with client_for(tiny_app(table, clock, turns, resume)) as client:
        assert "run.completed" in client.post("/unnamed-turn", headers=key("t")).text
        assert records(client) == []
        assert "run.completed" in client.post("/unnamed-turn", headers=key("t")).text
        assert turns.calls == 2
        assert resume.asked == []


def test_a_stream_is_not_held_back(
    table: Table, clock: FrozenClock, turns: Turns, resume: FakeResume
) -> None:
    """Under uvicorn, so that the first event can be read while the turn is still held."""

    def build(root: str) -> tuple[str, FastAPI]:
        return root, tiny_app(table, clock, turns, resume)

    with (
        serve_in_thread("tiny", build, "/health", lifespan="on") as root,
        turns.held(),
        httpx2.Client(base_url=root, timeout=10) as http,
        http.stream("POST", "/turn", headers=key("live")) as streamed,
    ):
        lines = streamed.iter_lines()
        assert next(lines) == "event: run.started"
        assert not turns.opened.is_set()  # the turn is still held: nothing was buffered
        # A retry while it streams re-attaches to the run.
        again = http.post("/turn", headers=key("live"))
        assert again.text == "event: resumed\n\n"
        turns.opened.set()
        assert "event: run.completed" in list(lines)
    assert turns.calls == 1


def test_the_key_is_settled_before_the_answer_leaves(
    table: Table, clock: FrozenClock, turns: Turns
) -> None:
    """A client that got an answer finds it stored, or finds the key free when the answer
    is not kept, even while the request goes on working after it answered."""

    def build(root: str) -> tuple[str, FastAPI]:
        return root, tiny_app(table, clock, turns, None)

    with (
        serve_in_thread("tiny", build, "/health", lifespan="on") as root,
        httpx2.Client(base_url=root, timeout=10) as http,
        turns.held(),
    ):
        made = http.post("/then-more?status=201", headers=key("kept"))
        assert (made.status_code, made.json()) == (201, {"call": 1})
        again = http.post("/then-more?status=201", headers=key("kept"))
        assert (again.status_code, again.json()) == (201, {"call": 1})
        assert again.headers["idempotent-replayed"] == "true"

        failed = http.post("/then-more?status=503", headers=key("not-kept"))
        assert (failed.status_code, failed.json()) == (503, {"call": 2})
        retried = http.post("/then-more?status=503", headers=key("not-kept"))
        assert (retried.status_code, retried.json()) == (503, {"call": 3})  # run again


def test_kept_headers_are_replayed_and_cookies_are_not(
    table: Table, clock: FrozenClock, turns: Turns
) -> None:
    with client_for(tiny_app(table, clock, turns, None)) as client:
        first = client.post("/headers", headers=key("h"))
        assert first.headers["set-cookie"] == "session=secret"
        again = client.post("/headers", headers=key("h"))
        assert (again.status_code, again.content) == (201, b"made")
        assert again.headers["etag"] == '"v1"'
        assert again.headers["location"] == "/things/1"
        assert again.headers["run-id"] == "run-9"
        assert again.headers["content-type"].startswith("text/plain")
        assert "set-cookie" not in again.headers
        assert "x-other" not in again.headers
        assert turns.calls == 1


def eventually(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout}s")
        time.sleep(0.02)


def test_a_running_request_keeps_its_claim(table: Table, clock: FrozenClock, turns: Turns) -> None:
    app = tiny_app(table, clock, turns, None, renew_seconds=0.02)
    with client_for(app) as client, ThreadPoolExecutor(1) as pool, turns.held():
        first = pool.submit(client.post, "/slow", headers=key("slow"))
        assert turns.entered.wait(10)
        (claim,) = records(client)
        assert claim.until is not None
        renewed = claim.until + CLAIM_SECONDS - 1
        clock.advance(CLAIM_SECONDS - 1)
        eventually(lambda: (records(client)[0].until or 0) >= renewed, "the claim being renewed")
        clock.advance(2)  # past the first `until`: only the renewal keeps the key
        busy = client.post("/slow", headers=key("slow"))
        assert busy.status_code == 409
        turns.opened.set()
        assert first.result(timeout=10).json() == {"call": 1}
    assert turns.calls == 1


@pytest.fixture
def failing(tmp_path: Path, clock: FrozenClock) -> Iterator[FailingStore]:
    store = FailingStore(tmp_path / "failing.db", "failing", load_definition(), clock=clock)
    yield store
    asyncio.run(store.close())


def test_a_renewal_that_fails_is_tried_again(
    failing: FailingStore, clock: FrozenClock, turns: Turns, caplog: pytest.LogCaptureFixture
) -> None:
    failing.failing = frozenset({"renew"})
    app = tiny_app(failing, clock, turns, None, renew_seconds=0.02)
    with client_for(app) as client, ThreadPoolExecutor(1) as pool, turns.held():
        first = pool.submit(client.post, "/slow", headers=key("slow"))
        assert turns.entered.wait(10)
        eventually(lambda: "renewing the claim" in caplog.text, "a renewal failing")
        failing.failing = frozenset()
        (claim,) = records(client)
        until = claim.until or 0
        clock.advance(10)
        eventually(lambda: (records(client)[0].until or 0) > until, "a renewal that works")
        turns.opened.set()
        assert first.result(timeout=10).json() == {"call": 1}
        again = client.post("/slow", headers=key("slow"))
        assert (again.json(), again.headers["idempotent-replayed"]) == ({"call": 1}, "true")


def test_a_request_that_lost_its_claim_leaves_the_new_answer_alone(
    table: Table, clock: FrozenClock, turns: Turns, caplog: pytest.LogCaptureFixture
) -> None:
    """A request stalled past its `until` (renewal never came) is taken over; when it ends,
    what the request that took over stored stays."""
    app = tiny_app(table, clock, turns, None, renew_seconds=3600)
    with client_for(app) as client, ThreadPoolExecutor(2) as pool, turns.held():
        stalled = pool.submit(client.post, "/slow", headers=key("slow"))
        assert turns.entered.wait(10)
        clock.advance(CLAIM_SECONDS)
        retry = pool.submit(client.post, "/slow", headers=key("slow"))
        eventually(lambda: turns.calls == 2, "the retry taking the key over and running")
        turns.opened.set()  # both end; the stalled one finds the key no longer its own
        assert stalled.result(timeout=10).json() == {"call": 1}
        assert retry.result(timeout=10).json() == {"call": 2}
        again = client.post("/slow", headers=key("slow"))
        assert again.json() == {"call": 2}  # the answer of the request that held the key
        assert again.headers["idempotent-replayed"] == "true"
    assert "taken over before its answer was stored" in caplog.text


async def test_a_client_that_leaves_mid_body_runs_nothing(
    tmp_path: Path, clock: FrozenClock
) -> None:
    table = SqliteTable(tmp_path / "left.db", "left", load_definition(), clock=clock)
    await table.create()
    reached: list[Scope] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope)

    said: list[Message] = [
        {"type": "http.request", "body": b'{"name": ', "more_body": True},
        {"type": "http.disconnect"},
    ]
    answered: list[Message] = []

    async def receive() -> Message:
        return said.pop(0)

    async def send(message: Message) -> None:
        answered.append(message)

    scope: Scope = {
        "type": "http",
        "method": "POST",
        "path": "/agents",
        "query_string": b"",
        "headers": [(b"idempotency-key", b"left")],
        "state": {
            "table": table,
            "repos": Repositories.over(table),
            "settings": Settings(sqlite_path=Path("unused.db"), local_user_email=EMAIL),
            "clock": clock,
            "local": LocalIdentity(EMAIL),
            "token_issuer": None,
        },
    }
    await Idempotency(app, resume=None)(scope, receive, send)
    assert (reached, answered) == ([], [])
    assert (await table.scan(entity="IdempotencyRecord")).items == []
    await table.close()
