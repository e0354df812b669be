"""The event stream's own work (api/http/sse.py, EventStream): events, the end, a client
that leaves, pings, a server shutting down, and every way one of them can fail; its
headers; and that a finished turn leaves no reference cycle for the garbage collector.

The ASGI tests call the response as a server would, with a `receive` and a `send` of their
own that behave as uvicorn's do (after the response is complete, `receive()` says the
client is gone)."""

import asyncio
import gc
import logging
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from starlette.types import Message

from api.http import sse
from api.http.sse import HEADERS, RUN_ID_HEADER, EventStream
from api.runtime.runner import PreparedTurn
from tests.fakes import serving
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.journal.test_resume import start_turn
from tests.runtime.conftest import messages, parse_sse, use_openai

SCOPE = {"type": "http", "method": "POST", "path": "/chat", "headers": []}


@dataclass
class Server:
    """The server's side of one request: what was sent, and a `receive` that hands over
    the request's body, then waits, as uvicorn does, until the response is complete or
    `leave()` is called."""

    sent: list[Message] = field(default_factory=list)
    complete: asyncio.Event = field(default_factory=asyncio.Event)
    fail_send: type[Exception] | None = None
    fail_on: bytes = b"data"
    receive_forever: bool = False
    receive_fails: bool = False
    stall_after: int | None = None  # bodies sent before a send waits for good (a full socket)
    _asked: int = 0

    async def receive(self) -> Message:
        self._asked += 1
        if self._asked == 1:
            return {"type": "http.request", "body": b"", "more_body": False}
        if self.receive_fails:
            raise RuntimeError("the connection's reader broke")
        if self.receive_forever:
            await asyncio.Event().wait()
        await self.complete.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        body = message.get("body", b"")
        if self.fail_send is not None and body.startswith(self.fail_on):
            raise self.fail_send("the client cannot be written to")
        if self.stall_after is not None and len(self.bodies) >= self.stall_after:
            await asyncio.Event().wait()
        self.sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.complete.set()

    def leave(self) -> None:
        self.complete.set()

    @property
    def bodies(self) -> list[bytes]:
        return [m["body"] for m in self.sent if m["type"] == "http.response.body"]


@dataclass
class Body:
    """A stream's events: `items`, then (with `stall`) nothing until closed."""

    items: list[bytes]
    stall: bool = False
    fails: bool = False  # raises after its items
    cleanup_fails: bool = False
    closed: bool = False

    async def __call__(self) -> AsyncIterator[bytes]:
        try:
            for item in self.items:
                yield item
            if self.stall:
                await asyncio.Event().wait()
            if self.fails:
                raise ValueError("the run's events broke")
        finally:
            self.closed = True
            if self.cleanup_fails:
                raise RuntimeError("the cleanup broke")


def response(body: Body, *, ping: float = 15) -> EventStream:
    return EventStream(body(), ping=ping)


def tasks_now() -> set["asyncio.Task[Any]"]:
    """The tasks running, but this one."""
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


@contextmanager
def server_stopping() -> Iterator[None]:
    """What a server told to stop does to the streams (`streams_end_on_exit_signals`)."""
    try:
        sse.OPEN.stop()
        yield
    finally:
        sse.OPEN.stopping = False


async def test_events_then_the_end_and_nothing_left_running() -> None:
    server, body = Server(), Body([b"data: 1\r\n\r\n", b"data: 2\r\n\r\n"])
    before = tasks_now()
    await response(body)(SCOPE, server.receive, server.send)
    assert server.sent[0]["type"] == "http.response.start"
    assert server.sent[0]["status"] == 200
    assert server.bodies == [b"data: 1\r\n\r\n", b"data: 2\r\n\r\n", b""]
    assert server.sent[-1]["more_body"] is False
    assert body.closed
    assert tasks_now() == before  # the disconnect listener ended by itself


async def test_a_client_that_leaves_stops_the_events_and_closes_their_source() -> None:
    server, body = Server(), Body([b"data: 1\r\n\r\n"], stall=True)
    streaming = asyncio.ensure_future(response(body)(SCOPE, server.receive, server.send))
    await asyncio.sleep(0.05)
    assert server.bodies == [b"data: 1\r\n\r\n"]
    server.leave()
    await asyncio.wait_for(streaming, 5)  # ends, without an error
    assert body.closed
    assert server.bodies == [b"data: 1\r\n\r\n", b""]  # the end, which uvicorn drops


async def test_a_server_that_never_says_the_response_is_complete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sse, "LISTENER_GRACE_SECONDS", 0.05)
    server, body = Server(receive_forever=True), Body([b"data: 1\r\n\r\n"])
    before = tasks_now()
    await asyncio.wait_for(response(body)(SCOPE, server.receive, server.send), 5)
    assert server.bodies == [b"data: 1\r\n\r\n", b""]
    assert tasks_now() == before  # its listener was cancelled after the grace


async def test_a_listener_that_fails_stops_the_stream_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, body = Server(receive_fails=True), Body([b"data: 1\r\n\r\n"], stall=True)
    with caplog.at_level(logging.WARNING, logger="api.http.sse"):
        await asyncio.wait_for(response(body)(SCOPE, server.receive, server.send), 5)
    assert body.closed
    assert "listening for the client's disconnect failed" in caplog.text
    assert "the connection's reader broke" in caplog.text


async def test_pings_while_nothing_happens() -> None:
    server, body = Server(), Body([], stall=True)
    streaming = asyncio.ensure_future(response(body, ping=0.02)(SCOPE, server.receive, server.send))
    await asyncio.sleep(0.15)
    server.leave()
    await asyncio.wait_for(streaming, 5)
    pings = [b for b in server.bodies if b.startswith(b": ping - ")]
    assert len(pings) >= 2
    assert all(b.endswith(b"\r\n\r\n") for b in pings)


async def test_a_ping_that_cannot_be_sent_stops_the_stream() -> None:
    server, body = Server(fail_send=OSError, fail_on=b": ping"), Body([], stall=True)
    await asyncio.wait_for(response(body, ping=0.02)(SCOPE, server.receive, server.send), 5)
    assert body.closed


async def test_an_event_that_cannot_be_sent_closes_the_source_and_raises() -> None:
    server = Server(fail_send=OSError, fail_on=b"data: 2")
    body = Body([b"data: 1\r\n\r\n", b"data: 2\r\n\r\n", b"data: 3\r\n\r\n"])
    with pytest.raises(OSError, match="cannot be written"):
        await asyncio.wait_for(response(body)(SCOPE, server.receive, server.send), 5)
    assert body.closed
    assert server.bodies == [b"data: 1\r\n\r\n"]


async def test_the_request_cancelled_stops_the_events() -> None:
    server, body = Server(), Body([b"data: 1\r\n\r\n"], stall=True)
    before = tasks_now()
    streaming = asyncio.ensure_future(response(body)(SCOPE, server.receive, server.send))
    await asyncio.sleep(0.05)
    streaming.cancel()
    with pytest.raises(asyncio.CancelledError):
        await streaming
    assert body.closed
    server.leave()
    await asyncio.sleep(0.01)
    assert tasks_now() == before


async def test_a_server_shutting_down_ends_its_streams() -> None:
    server, body = Server(), Body([b"data: 1\r\n\r\n"], stall=True)
    streaming = asyncio.ensure_future(response(body)(SCOPE, server.receive, server.send))
    await asyncio.sleep(0.05)
    with server_stopping():
        await asyncio.wait_for(streaming, 5)
    assert body.closed
    assert server.sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


async def test_a_stream_that_starts_while_the_server_stops_ends_at_once() -> None:
    server, body = Server(), Body([], stall=True)
    with server_stopping():
        await asyncio.wait_for(response(body)(SCOPE, server.receive, server.send), 5)
    assert body.closed
    assert server.bodies == [b""]


async def test_the_servers_exit_signal_ends_the_streams_then_reaches_the_server() -> None:
    """uvicorn's handler (here a stand-in) is set before the app starts; the app's lifespan
    adds to it, and puts it back when the app stops."""
    told: list[int] = []

    def uvicorns(number: int, frame: object) -> None:
        told.append(number)

    before = signal.signal(signal.SIGTERM, uvicorns)
    try:
        server, body = Server(), Body([b"data: 1\r\n\r\n"], stall=True)
        with sse.streams_end_on_exit_signals():
            assert signal.getsignal(signal.SIGTERM) is not uvicorns
            streaming = asyncio.ensure_future(response(body)(SCOPE, server.receive, server.send))
            await asyncio.sleep(0.05)
            signal.raise_signal(signal.SIGTERM)
            await asyncio.wait_for(streaming, 5)
            assert sse.OPEN.stopping
        assert signal.getsignal(signal.SIGTERM) is uvicorns
        assert not sse.OPEN.stopping
    finally:
        signal.signal(signal.SIGTERM, before)
    assert told == [signal.SIGTERM]
    assert body.closed
    assert server.sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


def test_without_a_servers_handler_no_signal_is_touched() -> None:
    """The default (SIGTERM ends the process) is left as it is: nobody serves from here."""
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    async def run() -> None:
        with sse.streams_end_on_exit_signals():
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    asyncio.run(run())


async def test_a_shutdown_is_not_held_by_a_client_that_reads_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its socket is full: the response's end cannot be sent, and is not waited for long."""
    monkeypatch.setattr(sse, "END_SECONDS", 0.05)
    server, body = Server(stall_after=1), Body([b"data: 1\r\n\r\n", b"data: 2\r\n\r\n"], stall=True)
    before = tasks_now()
    streaming = asyncio.ensure_future(response(body)(SCOPE, server.receive, server.send))
    await asyncio.sleep(0.05)
    with server_stopping():
        await asyncio.wait_for(streaming, 5)
    assert body.closed
    assert tasks_now() == before  # the listener, never told of an end, was cancelled


async def test_events_that_fail_end_the_call_at_once_with_their_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No grace is waited for the disconnect listener: the response never completed, so
    the server will not end it."""
    monkeypatch.setattr(sse, "LISTENER_GRACE_SECONDS", 3600)
    server, body = Server(), Body([b"data: 1\r\n\r\n"], fails=True)
    before = tasks_now()
    with pytest.raises(ValueError, match="events broke"):
        await asyncio.wait_for(response(body)(SCOPE, server.receive, server.send), 5)
    assert server.bodies == [b"data: 1\r\n\r\n"]
    assert tasks_now() == before


async def test_a_failed_stream_leaves_no_reference_cycle() -> None:
    server, body = Server(), Body([b"data: 1\r\n\r\n"], fails=True)
    gc.collect()
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        with pytest.raises(ValueError, match="events broke"):
            await response(body)(SCOPE, server.receive, server.send)
        gc.collect()
        kinds = {type(o).__qualname__ for o in gc.garbage}
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
    assert not kinds & {"_Streaming", "EventStream", "ValueError"}


async def test_a_cleanup_that_fails_is_said_not_lost(caplog: pytest.LogCaptureFixture) -> None:
    """The request cancelled, and the events' cleanup raising on the way out."""
    server, body = Server(), Body([b"data: 1\r\n\r\n"], stall=True, cleanup_fails=True)
    streaming = asyncio.ensure_future(response(body)(SCOPE, server.receive, server.send))
    await asyncio.sleep(0.05)
    with caplog.at_level(logging.WARNING, logger="api.http.sse"):
        streaming.cancel()
        with pytest.raises(asyncio.CancelledError):
            await streaming
    assert "a stream's events failed" in caplog.text
    assert "the cleanup broke" in caplog.text


def test_the_headers_are_those_sse_starlette_sent() -> None:
    """The response was sse-starlette's: the same headers, in the same order."""

    async def nothing() -> AsyncIterator[bytes]:
        yield b""

    sent = EventStream(nothing(), ping=15, headers={**HEADERS, RUN_ID_HEADER: "r1"})
    assert sent.raw_headers == [
        (b"cache-control", b"no-store"),
        (b"x-accel-buffering", b"no"),
        (b"run-id", b"r1"),
        (b"connection", b"keep-alive"),
        (b"content-type", b"text/event-stream; charset=utf-8"),
    ]
    bare = EventStream(nothing(), ping=15)
    assert bare.raw_headers == [
        (b"cache-control", b"no-store"),
        (b"connection", b"keep-alive"),
        (b"x-accel-buffering", b"no"),
        (b"content-type", b"text/event-stream; charset=utf-8"),
    ]
    assert bare.status_code == 200


async def test_head_gets_the_headers_alone() -> None:
    server, body = Server(), Body([b"data: 1\r\n\r\n"])
    await response(body)({**SCOPE, "method": "HEAD"}, server.receive, server.send)
    assert server.sent[0]["status"] == 200
    assert server.bodies == [b""]


# --- a real server ---------------------------------------------------------------------


def test_finished_turns_leave_no_reference_cycle(served: str, fake_openai: FakeLLM) -> None:
    """A cycle through a turn's objects kept all of them (the stream, the prepared turn,
    its lease and its hooks) until a collection found them: at 500 concurrent turns,
    collections of up to 120 ms."""
    http = httpx2.Client(base_url=served, timeout=30)
    agent_id = use_openai(http, fake_openai)
    ended = 0
    gc.collect()
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds is kept in gc.garbage
    try:
        for _ in range(3):
            fake_openai.replies.append(Reply(text="Once upon a time"))
            answer = http.post("/chat", json={"agent_id": agent_id, "prompt": "A story?"})
            found, _ = parse_sse(answer.text)
            ended += found[-1].name == "run.completed"
        http.get("/health")  # the last turn's task has ended by the time this answers
        gc.collect()
        kinds = {type(o) for o in gc.garbage}
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
    assert ended == 3
    ours = {k for k in kinds if k.__module__.startswith("api.")}
    assert not ours, f"cycles through {sorted(k.__qualname__ for k in ours)}"
    assert PreparedTurn not in kinds
    assert asyncio.CancelledError not in kinds


@pytest.mark.parametrize("workers", [1, 2])
def test_a_server_told_to_stop_ends_a_stream_the_model_holds_open(
    tmp_path: Path, fake_openai: FakeLLM, workers: int
) -> None:
    """uvicorn waits for open connections before it stops: a stream the model keeps open
    would hold the process forever. SIGTERM ends it, whole (the chunked body closed: a
    cut one is an error on the client's side), the server stops, and the turn is kept as
    interrupted with what the model had said."""
    env = {"STORE": "sqlite", "SQLITE_PATH": str(tmp_path / "db.sqlite")}
    env["ENCRYPTION_KEY"] = "k" * 40
    with (
        serving.server_process(env, workers=workers, own_group=True) as server,
        httpx2.Client(base_url=server.root, timeout=30) as http,
    ):
        agent_id = use_openai(http, fake_openai)
        fake_openai.replies.append(Reply(text="Once upon a time", stall_after_chunks=3))
        with start_turn(http, agent_id) as stream:
            run_id = stream.headers["Run-Id"]
            chunks, seen = stream.iter_bytes(), b""
            while b"event: text.delta" not in seen:
                seen += next(chunks)
            server.process.send_signal(signal.SIGTERM)
            for chunk in chunks:  # ends, well before the client's 30 s read timeout
                seen += chunk
        sent = parse_sse(seen.decode())[0]
        said = "".join(e.data["text"] for e in sent if e.name == "text.delta")
        # uvicorn, once stopped gracefully, raises the signal again: one process ends by it.
        assert server.process.wait(timeout=20) in (0, -signal.SIGTERM)

    with (
        serving.server_process(env, workers=1) as server,
        httpx2.Client(base_url=server.root, timeout=30) as http,
    ):
        run = http.get(f"/runs/{run_id}").json()
        assert run["state"] == "interrupted"
        stored = messages(http, run["conversation_id"])
        assert [(m["role"], m["interrupted"]) for m in stored] == [
            ("user", False),
            ("assistant", True),
        ]
        # The stream ends the moment the signal arrives: what the model had sent by then
        # ("Once", or "Once upon" before it stalled), at least what the client was sent.
        kept = stored[1]["content"]
        assert said
        assert kept.startswith(said)
        assert "Once upon".startswith(kept)
