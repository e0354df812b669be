"""An HTTP/1.1 server on 127.0.0.1 written on raw sockets, for what uvicorn will not do on
demand: close a kept-alive connection right after an answer (without `Connection: close`),
drop a request unanswered, answer nothing for a while, or play a forward proxy (it records
the request line as sent, absolute URL included). `respond` decides each answer from the
request; None drops the connection without a byte, and a status of 0 sends the bytes
given as they are (an answer that is not HTTP)."""

import json
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Seen:
    method: str
    target: str  # as sent: a path, or an absolute URL when sent to a proxy
    headers: dict[str, str]  # names in lower case
    body: bytes
    connection: int  # which connection, counted from 1
    nth: int  # which request on that connection, counted from 1

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    def json(self) -> Any:
        return json.loads(self.body)


Reply = tuple[int, Any]  # status, and a JSON value (bytes are sent as the body)
Respond = Callable[[Seen], Reply | None]


def memory_like(seen: Seen) -> Reply:
    """What the client needs from a memory server: healthy, the agent, an empty context
    that repeats the query (so that each caller can tell its own answer), captures taken."""
    if seen.path == "/health":
        return 200, {"status": "ok"}
    if seen.path == "/agents":
        return 201, {"id": "agent-1", "name": seen.json()["name"]}
    if seen.path.startswith("/context/"):
        return 200, {"memory_blocks": [], "relevant_messages": [], "query": seen.json()["query"]}
    return 200, {}


@dataclass
class RawServer:
    url: str
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0  # opened so far
    open: int = 0  # still open
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests_to(self, prefix: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.path.startswith(prefix)]

    def wait_until_all_closed(self, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while self.open and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.open


@contextmanager
def raw_server(
    respond: Respond = memory_like, *, close_after_each: bool = False
) -> Iterator[RawServer]:
    state = RawServer(url="")

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            with state.lock:
                state.connections += 1
                state.open += 1
                number = state.connections
            try:
                nth = 0
                while True:
                    nth += 1
                    seen = self._read(number, nth)
                    if seen is None:
                        return
                    with state.lock:
                        state.seen.append(seen)
                    reply = respond(seen)
                    if reply is None:
                        return
                    self._write(*reply)
                    if close_after_each:
                        return
            except OSError:
                return
            finally:
                self.connection.close()
                with state.lock:
                    state.open -= 1

        def _read(self, number: int, nth: int) -> Seen | None:
            line = self.rfile.readline()
            if not line:
                return None
            method, target, _ = line.decode("latin-1").split(" ", 2)
            headers: dict[str, str] = {}
            while (header := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = header.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = self.rfile.read(int(headers.get("content-length", "0")))
            return Seen(method, target, headers, body, number, nth)

        def _write(self, status: int, value: Any) -> None:
            if status == 0:
                self.wfile.write(value)
                return
            body = value if isinstance(value, bytes) else json.dumps(value).encode()
            kind = "text/plain" if isinstance(value, bytes) else "application/json"
            head = (
                f"HTTP/1.1 {status} Answer\r\ncontent-type: {kind}\r\n"
                f"content-length: {len(body)}\r\n\r\n"
            )
            self.wfile.write(head.encode() + body)

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        block_on_close = False
        allow_reuse_address = True

    with Server(("127.0.0.1", 0), Handler) as server:
        state.url = f"http://127.0.0.1:{server.server_address[1]}"
        thread = threading.Thread(target=server.serve_forever, name="raw-http", daemon=True)
        thread.start()
        try:
            yield state
        finally:
            server.shutdown()
            thread.join(timeout=10)
