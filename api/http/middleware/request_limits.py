"""Requests bigger than the service takes are refused before they are read: a body over
MAX_REQUEST_BYTES by its Content-Length at once, a chunked one as soon as it passes the
limit, and a request with more than MAX_REQUEST_HEADERS headers. A route that streams its
body somewhere other than memory (an import file, to disk) has a larger limit of its own
(`larger`, by exact path, or `larger_paths`, by a pattern the whole path matches: a
document's upload, whose path names its agent). Without this a client
(signed in or not) could make the server hold a body of any size before any check runs.
Written as plain ASGI because no middleware of Starlette's or uvicorn's limits bodies."""

import asyncio
import contextlib
import re
from collections.abc import Mapping

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.http.errors import HTTP_CODES, json_error

MAX_REQUEST_HEADERS = 100
# What is read and thrown away of a body refused for its size, for at most DRAIN_SECONDS:
# most clients send the whole body before they read an answer, and a connection closed
# on a body still coming reaches them as a reset, not as the 413. Past this, it is one.
DRAIN_BYTES = 8 * 2**20
DRAIN_SECONDS = 5.0


def _too_large(limit: int) -> str:
    return f"The request body is larger than this service takes ({limit} bytes at most)."


class RequestLimits:
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        larger: Mapping[str, int] | None = None,
        larger_paths: Mapping[str, int] | None = None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.larger = dict(larger or {})
        self.larger_paths = [(re.compile(p), n) for p, n in (larger_paths or {}).items()]

    def _limit(self, path: str) -> int:
        limit = self.larger.get(path)
        if limit is not None:
            return limit
        for pattern, bytes_ in self.larger_paths:
            if pattern.fullmatch(path):
                return bytes_
        return self.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope["path"])
        if len(scope["headers"]) > MAX_REQUEST_HEADERS:
            message = f"A request may carry at most {MAX_REQUEST_HEADERS} headers."
            await _refuse(scope, receive, send, 431, message)
            return
        headers = Headers(scope=scope)
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            if headers.get("expect", "").lower() != "100-continue":  # else none is sent
                await _drain(receive, more=True)
            await _refuse(scope, receive, send, 413, _too_large(limit))
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    await _drain(receive, more=message.get("more_body", False))
                    # Raised where the app reads the body; the error handler answers 413.
                    raise HTTPException(413, _too_large(limit))
            return message

        await self.app(scope, counted, send)


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    body: dict[str, object] = {"code": HTTP_CODES[status], "message": message}
    response = json_error(body, status, {"Connection": "close"})
    await response(scope, receive, send)


async def _drain(receive: Receive, *, more: bool) -> None:
    """The rest of a refused body read and dropped, up to DRAIN_BYTES and DRAIN_SECONDS."""
    drained = 0
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(DRAIN_SECONDS):
            while more and drained <= DRAIN_BYTES:
                message = await receive()
                if message["type"] != "http.request":
                    return
                drained += len(message.get("body", b""))
                more = message.get("more_body", False)
