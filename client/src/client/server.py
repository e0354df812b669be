"""The memory server's REST API, as learning() uses it (seed 002's endpoints): GET /health,
POST /agents, POST /context/{agent_name}, POST /messages (and our POST /messages/batch,
where the server has it). One synchronous httpx2 client,
shared by the calls of every thread (httpx2 clients are thread-safe); async callers reach
it through a worker thread, so it is never tied to one event loop. POST /context, the one
request on the path of every model call, goes through `fast_http`'s kept-alive
`http.client` connections instead, when the URL is plain http:// and no proxy applies
(why: fast_http's docstring); both ways give the same answers and the same errors."""

import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, NoReturn
from urllib.parse import quote

import httpx2

from client.errors import START_HINT, MemoryServerError, MemoryServerUnavailable
from client.fast_http import ConnectionPool, Sent, TransportError, direct_route

DEFAULT_URL = "http://127.0.0.1:8283"
# The server's limits (docs/local-server.md): longer values would be refused with a 422.
MAX_QUERY_CHARS = 32_000
MAX_CONTENT_CHARS = 50_000
MAX_BATCH_MESSAGES = 10  # in one POST /messages/batch
USER_AGENT = "agent-memory-client/0.1.0"

JsonObject = dict[str, Any]


class MemoryServer:
    def __init__(self, url: str, *, api_key: str | None, timeout: float) -> None:
        self.url = url.rstrip("/")
        headers = {"user-agent": USER_AGENT}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        # Whether POST /messages/batch is worth trying (False once the server lacked it).
        self.batches = True
        self._http = httpx2.Client(
            base_url=self.url,
            headers=headers,
            timeout=httpx2.Timeout(timeout, connect=min(timeout, 2.0)),
        )
        # Read, like httpx2's proxies, once here: None sends POST /context through httpx2.
        route = direct_route(self.url)
        self.fast: ConnectionPool | None = None
        if route is not None:
            self.fast = ConnectionPool(
                route,
                headers={**headers, "content-type": "application/json"},
                timeout=timeout,
                connect_timeout=min(timeout, 2.0),
            )

    def close(self) -> None:
        self._http.close()
        if self.fast is not None:
            self.fast.close()

    def health(self) -> JsonObject:
        """The server's /health; MemoryServerUnavailable when nothing healthy answers."""
        try:
            response = self._http.get("/health")
        except httpx2.HTTPError as e:
            raise MemoryServerUnavailable(
                f"Cannot reach the memory server at {self.url} ({_reason(e)}). {START_HINT}"
            ) from e
        body = _json(response.content)
        if response.status_code != 200 or body.get("status") != "ok":
            detail = body.get("message") or body.get("status") or response.reason_phrase
            raise MemoryServerUnavailable(
                f"The memory server at {self.url} is not healthy "
                f"({response.status_code}: {detail}). {START_HINT}",
                status=response.status_code,
                code=_code(body),
            )
        return body

    def ensure_agent(self, name: str) -> JsonObject:
        """The agent of that name, created if the caller has none (POST /agents)."""
        return self._post("/agents", {"name": name}, expect=(200, 201))

    def context(self, agent: str, query: str) -> JsonObject:
        """The agent's memory blocks and the messages relevant to `query`."""
        return self.start_context(agent, query).result()

    def start_context(self, agent: str, query: str) -> "PendingContext":
        """`context`, with the request sent now (on the kept-alive pool) and its answer
        read by `result()`: the caller works meanwhile. Through httpx2 (no pool), the
        whole request is made by `result()`."""
        body = {"agent_name": agent, "query": query[:MAX_QUERY_CHARS]}
        path = f"/context/{quote(agent, safe='')}"
        if self.fast is None:
            return PendingContext(partial(self._send, path, body, expect=(200,)))
        try:
            # Read-only: the pool may send it again when a kept-alive connection turns
            # out closed.
            sent = self.fast.send(path, _dumps(body))
        except TransportError as e:
            # Raised where the answer is read, as a failure there would be.
            return PendingContext(partial(_raise, self._unreachable(e)))
        return PendingContext(partial(self._answer, path, sent), sent.drop)

    def add_message(
        self, agent: str, role: str, content: str, metadata: Mapping[str, Any]
    ) -> JsonObject:
        body = {"agent_name": agent, "role": role, "content": content, "metadata": dict(metadata)}
        return self._post("/messages", body, expect=(200, 201))

    def add_messages(self, agent: str, said: Sequence[tuple[str, str, Mapping[str, Any]]]) -> bool:
        """Several messages (role, content, metadata) stored in order with one request,
        all or none (POST /messages/batch). False, with nothing stored, when the server
        has no such route (seed 002's own server): `batches` is then False, and the
        caller posts them one at a time."""
        body = {
            "agent_name": agent,
            "messages": [
                {"role": role, "content": content, "metadata": dict(metadata)}
                for role, content, metadata in said
            ],
        }
        try:
            self._send("/messages/batch", body, expect=(200, 201))
        except MemoryServerError as e:
            if not _no_such_route(e):
                raise
            self.batches = False
            return False
        return True

    def _post(self, path: str, body: JsonObject, *, expect: tuple[int, ...]) -> JsonObject:
        return _json(self._send(path, body, expect=expect))

    def _send(self, path: str, body: JsonObject, *, expect: tuple[int, ...]) -> bytes:
        """POST `body` as JSON through httpx2; the answer's content when its status is
        expected."""
        try:
            response = self._http.post(path, json=body)
        except httpx2.HTTPError as e:
            raise self._unreachable(e) from e
        return self._expected(
            path, expect, response.status_code, response.reason_phrase, response.content
        )

    def _answer(self, path: str, sent: Sent) -> bytes:
        """The content of the fast path's answer, checked as `_send` checks httpx2's."""
        try:
            answer = sent.answer()
        except TransportError as e:
            raise self._unreachable(e) from e
        return self._expected(path, (200,), answer.status, answer.reason, answer.content)

    def _expected(
        self, path: str, expect: tuple[int, ...], status: int, reason: str, content: bytes
    ) -> bytes:
        if status not in expect:
            raise _refused(self.url, f"POST {path}", status, reason, content)
        return content

    def _unreachable(self, error: Exception) -> MemoryServerUnavailable:
        return MemoryServerUnavailable(
            f"Cannot reach the memory server at {self.url} ({_reason(error)})."
        )


class PendingContext:
    """A POST /context under way: `result()` gives its answer (or raises as `context`
    does), once; `cancel()` gives it up (its connection closed, never reused)."""

    def __init__(self, read: Callable[[], bytes], drop: Callable[[], None] | None = None) -> None:
        self._read = read
        self._drop = drop

    def result(self) -> JsonObject:
        return _json(self._read())

    def cancel(self) -> None:
        if self._drop is not None:
            self._drop()


def _dumps(body: JsonObject) -> bytes:
    # As httpx2 encodes a `json=` body.
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def _raise(error: Exception) -> NoReturn:
    raise error


def _no_such_route(error: MemoryServerError) -> bool:
    """A server without the route (seed 002's own answers 404 or 405), not a refusal of
    the request (an unknown agent is a 404 too, with its own code)."""
    return error.status == 405 or (error.status == 404 and error.code in (None, "not_found"))


def _json(content: bytes) -> JsonObject:
    """A response's JSON object (read as httpx2's `Response.json()` reads it); {} when it
    is none."""
    try:
        body: object = json.loads(content)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _code(body: JsonObject) -> str | None:
    code = body.get("code")
    return code if isinstance(code, str) else None


def _reason(error: Exception) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _refused(url: str, what: str, status: int, reason: str, content: bytes) -> MemoryServerError:
    """The error for an answer other than the expected one, from either transport."""
    body = _json(content)
    code = _code(body)
    message = body.get("message") or content.decode("utf-8", errors="replace")[:200] or reason
    text = f"The memory server at {url} refused {what}: {status}"
    text += f" {code}: {message}" if code else f": {message}"
    if status == 401:
        text += (
            ". It needs an API key: pass api_key=... or set MEMORY_API_KEY to a key made "
            "at POST /auth/api-keys (sent as `Authorization: Bearer amk_...`)."
        )
    return MemoryServerError(text, status=status, code=code)
