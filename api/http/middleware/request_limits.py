"""Requests bigger than the service takes are refused before they are read: a body over
MAX_REQUEST_BYTES by its Content-Length at once, a chunked one as soon as it passes the
limit, and a request with more than MAX_REQUEST_HEADERS headers. A route that streams its
body somewhere other than memory (an import file, to disk) has a larger limit of its own
(`larger`, by exact path). Without this a client
(signed in or not) could make the server hold a body of any size before any check runs.
Written as plain ASGI because no middleware of Starlette's or uvicorn's limits bodies."""

from collections.abc import Mapping

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.http.errors import HTTP_CODES, json_error

MAX_REQUEST_HEADERS = 100


def _too_large(limit: int) -> str:
    return f"The request body is larger than this service takes ({limit} bytes at most)."


class RequestLimits:
    def __init__(
        self, app: ASGIApp, *, max_body_bytes: int, larger: Mapping[str, int] | None = None
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.larger = dict(larger or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.larger.get(scope["path"], self.max_body_bytes)
        if len(scope["headers"]) > MAX_REQUEST_HEADERS:
            message = f"A request may carry at most {MAX_REQUEST_HEADERS} headers."
            await _refuse(scope, receive, send, 431, message)
            return
        length = Headers(scope=scope).get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await _refuse(scope, receive, send, 413, _too_large(limit))
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # Raised where the app reads the body; the error handler answers 413.
                    raise HTTPException(413, _too_large(limit))
            return message

        await self.app(scope, counted, send)


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    body: dict[str, object] = {"code": HTTP_CODES[status], "message": message}
    response = json_error(body, status, {"Connection": "close"})
    await response(scope, receive, send)
