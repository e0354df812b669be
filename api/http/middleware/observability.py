"""The outermost middleware: every request gets its id (X-Request-ID, sent back on every
response: errors, streams and replays), is counted and timed by route template and status,
is traced when TRACING is on, and leaves one access log line.

Plain ASGI, like RequestLimits: one wrapper around `send` per request, nothing buffered."""

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.observability import metrics, request_id, tracing

log = logging.getLogger("api.access")

# Polled by machines every few seconds: logged at debug level, not info.
QUIET_ROUTES = frozenset({"/health", "/health/ready", "/metrics"})
CLIENT_LEFT = 499  # the status recorded for a request whose client left before its answer
# A scope key: the route label of a request answered by a middleware rather than a route
# (the web app's pages and files: api/webapp), so it is not counted as unmatched.
ROUTE_LABEL = "agent_memory.route_label"


def route_of(scope: Scope) -> str:
    """The template of the route that matched (bounded, unlike the path)."""
    label = scope.get(ROUTE_LABEL)
    if isinstance(label, str):
        return label
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else metrics.UNMATCHED


class Observability:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        sent = None
        for name, value in scope["headers"]:
            if name == request_id.RAW_HEADER:
                sent = value
                break
        rid = request_id.accept(sent)
        request_id.begin(rid)
        header = (request_id.RAW_HEADER, rid.encode("latin-1"))
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), header]
            await send(message)

        span = tracing.RequestSpan(scope, rid) if tracing.enabled() else None
        error: BaseException | None = None
        try:
            await self.app(scope, receive, send_with_id)
        except BaseException as e:
            error = e
            raise
        finally:
            if not status:  # raised before answering: the error handler answers 500
                status = 500 if isinstance(error, Exception) else CLIENT_LEFT
            seconds = time.perf_counter() - start
            route = route_of(scope)
            metrics.observe_request(scope["method"], route, status, seconds)
            if span is not None:
                span.end(route, status, error)
            level = logging.DEBUG if route in QUIET_ROUTES else logging.INFO
            if log.isEnabledFor(level):
                log.log(
                    level,
                    "%s %s %d %.1fms",
                    scope["method"],
                    scope["path"],
                    status,
                    seconds * 1000,
                    extra={
                        "method": scope["method"],
                        "path": scope["path"],
                        "route": route,
                        "status": status,
                        "duration_ms": round(seconds * 1000, 3),
                    },
                )
