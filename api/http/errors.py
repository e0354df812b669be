"""Every error leaves as JSON `{code, message, request_id}` with a stable code, whatever
raised it; the request id is the one sent back in X-Request-ID (api/observability)."""

import logging
from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.errors import SERVER_MESSAGE, AppError, public_body
from api.observability import request_id

log = logging.getLogger(__name__)

HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    431: "request_headers_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}


def json_error(
    body: Mapping[str, object], status_code: int, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """An error's response: its body with the id of the request it answers."""
    rid = request_id.current()
    content = {**body, "request_id": rid} if rid is not None else dict(body)
    return JSONResponse(content, status_code=status_code, headers=headers)


async def app_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AppError)
    if exc.status_code >= 500:
        log.error("%s %s failed: %s (%s)", request.method, request.url.path, exc.code, exc)
    return json_error(public_body(exc), exc.status_code, exc.headers())


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    # The offending input is left out on purpose: it may be a secret the client sent.
    errors = [
        {
            "loc": [str(p) for p in e.get("loc", ())],
            "message": e.get("msg", ""),
            "type": e.get("type"),
        }
        for e in exc.errors()
    ]
    summary = "; ".join(f"{'.'.join(e['loc'])}: {e['message']}" for e in errors)
    body = {
        "code": "validation_error",
        "message": f"The request is not valid: {summary}",
        "details": {"errors": errors},
    }
    return json_error(body, 422)


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    return json_error({"code": code, "message": message}, exc.status_code, exc.headers)


async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
    # Answered by Starlette's outermost middleware, outside ours: the header is set here.
    rid = request_id.current()
    headers = {request_id.HEADER: rid} if rid else None
    return json_error({"code": "internal_error", "message": SERVER_MESSAGE}, 500, headers)


def install(app: FastAPI) -> None:
    app.add_exception_handler(AppError, app_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected_error)
