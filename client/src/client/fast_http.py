"""Keep-alive HTTP/1.1 connections of the standard library (`http.client`) for the one
request on the path of every intercepted model call, `POST /context/{agent}`.

Why not the shared httpx2 client: issue 13 allows learning() 3 ms at p50 per call on
loopback and the client was at 3.3-3.6 ms. The same request, back to back against a real
server process on the 2-core development machine, took 2.0-2.4 ms p50 through httpx2 and
1.5-1.9 ms through a kept-alive `http.client.HTTPConnection` with json.dumps/json.loads:
httpx2's request and response models, its transport layers and its connection pool's
bookkeeping cost about 0.4 ms per request. `MemoryServer` uses this pool only for plain
http:// URLs that no proxy setting applies to (`direct_route`); everything else stays on
httpx2.

A connection serves one request at a time: a thread takes an idle one (or opens one) and
gives it back once it has read a whole response. A connection that failed is closed,
never reused. uvicorn closes a keep-alive connection idle for 5 s, so a connection taken
from the pool is checked first (readable while idle means the server closed it) and, as
the peer can close it at any moment, a request on a reused connection that fails before
any byte of the answer is sent once more on a new connection. Callers must send only
requests that are safe to repeat."""

import http.client
import select
import socket
import threading
import urllib.request
from dataclasses import dataclass
from ipaddress import ip_address
from urllib.parse import urlsplit

import httpx2

MAX_IDLE = 8  # idle connections kept; more threads at once open more, closed on return

# What a request through this pool can raise: the server unreachable, a timeout, a
# connection broken off, or an answer that is not HTTP.
TransportError = (OSError, http.client.HTTPException)

# Failures of a reused connection that the peer closed before answering: the request was
# not processed (or, for a read-only one, may be sent again).
_STALE = (
    http.client.RemoteDisconnected,
    ConnectionResetError,
    BrokenPipeError,
    ConnectionAbortedError,
)


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    content: bytes


@dataclass(frozen=True)
class Route:
    host: str
    port: int
    prefix: str  # the base URL's path as sent (percent-escaped), without its trailing slash


def direct_route(url: str) -> Route | None:
    """Where to connect for `url` when a plain connection is exactly what httpx2 would
    make; None when httpx2 must be used: https (TLS settings, certificates), credentials
    in the URL, a query or fragment in the base URL, or a proxy the environment sets for
    it. httpx2 reads its proxies with `urllib.request.getproxies()` (lower and upper case
    HTTP_PROXY, ALL_PROXY, NO_PROXY; system settings on macOS and Windows) when the client
    is built, as this is called; a proxy counts as not applying only when NO_PROXY names
    the host itself or is `*`, which httpx2 bypasses too (its suffix and CIDR rules are
    left to httpx2)."""
    try:
        parts = urlsplit(url)
        port = parts.port or 80
    except ValueError:
        return None
    host = parts.hostname
    if parts.scheme != "http" or not host or parts.username or parts.password:
        return None
    if parts.query or parts.fragment:
        return None
    proxies = urllib.request.getproxies()
    if (proxies.get("http") or proxies.get("all")) and not _excluded(host, proxies.get("no", "")):
        return None
    # http.client sends the target as given (and refuses a space or a non-ASCII
    # character): the path goes escaped exactly as httpx2 escapes it.
    try:
        path = httpx2.URL(url).raw_path.decode("ascii")
    except httpx2.InvalidURL:
        return None
    return Route(host, port, path.rstrip("/"))


def _excluded(host: str, no_proxy: str) -> bool:
    host = _normal(host)
    for entry in no_proxy.split(","):
        entry = entry.strip()
        if entry == "*":
            return True
        if entry and _normal(entry.strip("[]")) == host:
            return True
    return False


def _normal(host: str) -> str:
    try:
        return str(ip_address(host))
    except ValueError:
        return host.lower()


class ConnectionPool:
    """Kept-alive connections to one host, shared by every thread."""

    def __init__(
        self, route: Route, *, headers: dict[str, str], timeout: float, connect_timeout: float
    ) -> None:
        self.route = route
        self._headers = headers
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False
        self.opened = 0  # connections opened so far (the tests read it)

    def send(self, path: str, body: bytes) -> "Sent":
        """POST `body` (JSON) to the route's prefix + `path` now; its answer is read by
        `Sent.answer`, so the caller can work while the server does. Raises a
        `TransportError` when the request could not be sent or no whole answer came. Sent
        twice at most, and only when a reused connection failed before answering: only for
        requests that are safe to repeat."""
        # http.client adds the content-length of a bytes body itself.
        target = self.route.prefix + path
        connection, reused = self._take()
        try:
            self._request(connection, target, body)
        except _STALE:
            if not reused:
                raise
            connection, reused = self._open(), False
            self._request(connection, target, body)
        return Sent(self, connection, reused, target, body)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _request(self, connection: http.client.HTTPConnection, target: str, body: bytes) -> None:
        try:
            connection.request("POST", target, body=body, headers=self._headers)
        except BaseException:
            connection.close()
            raise

    def _read(self, connection: http.client.HTTPConnection) -> Answer:
        try:
            response = connection.getresponse()
            content = response.read()
        except BaseException:
            connection.close()
            raise
        if response.will_close:
            connection.close()
        else:
            self._give_back(connection)
        return Answer(response.status, response.reason, content)

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._open(), False
            if _still_open(connection):
                return connection, True
            connection.close()

    def _open(self) -> http.client.HTTPConnection:
        connection = http.client.HTTPConnection(
            self.route.host, self.route.port, timeout=self._connect_timeout
        )
        try:
            connection.connect()
            assert connection.sock is not None
            connection.sock.settimeout(self._timeout)
            # Nagle's algorithm would hold the body back until the headers are acknowledged.
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except BaseException:
            connection.close()
            raise
        with self._lock:
            self.opened += 1
        return connection

    def _give_back(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < MAX_IDLE:
                self._idle.append(connection)
                return
        connection.close()


class Sent:
    """A request sent on a connection of the pool, its answer not read yet. Read it once
    (`answer`), or `drop` it: the connection is then closed, never reused."""

    def __init__(
        self,
        pool: ConnectionPool,
        connection: http.client.HTTPConnection,
        reused: bool,
        target: str,
        body: bytes,
    ) -> None:
        self._pool = pool
        self._connection: http.client.HTTPConnection | None = connection
        self._reused = reused
        self._target = target
        self._body = body

    def answer(self) -> Answer:
        connection, self._connection = self._connection, None
        if connection is None:
            raise RuntimeError("this request's answer was read or dropped already")
        try:
            return self._pool._read(connection)
        except _STALE:
            if not self._reused:
                raise
        # The peer closed the kept-alive connection before answering: sent once more.
        fresh = self._pool._open()
        self._pool._request(fresh, self._target, self._body)
        return self._pool._read(fresh)

    def drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


def _still_open(connection: http.client.HTTPConnection) -> bool:
    """An idle connection's socket has nothing to read; readable at once means the peer
    closed it (or sent something unasked): not to be reused (as urllib3's
    `wait_for_read(sock, timeout=0)`)."""
    sock = connection.sock
    if sock is None:
        return False
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return not poller.poll(0)
        readable, _, _ = select.select([sock], [], [], 0)
        return not readable
    except (OSError, ValueError):
        return False
