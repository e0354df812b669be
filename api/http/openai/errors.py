"""Errors in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, for every
failure of these routes: ours (an AppError keeps its status and code), a body that does not
validate (400, as OpenAI answers it, not our 422), and the unexpected. The rest of the API
keeps its own `{code, message}`."""

import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from api.errors import AppError, BadRequest, NotFound, public_body
from api.http.openai.schemas import ErrorDetail, ErrorOut
from api.http.unicode_body import TextRoute
from api.observability import request_id

log = logging.getLogger(__name__)

# The OpenAI SDKs retry 408, 409, 429 and 5xx unless told not to.
NO_RETRY = {"x-should-retry": "false"}


class OpenAIError(BadRequest):
    """A request OpenAI would refuse, naming the parameter at fault."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class InvalidValue(OpenAIError):
    code = "invalid_value"


class MissingParameter(OpenAIError):
    code = "missing_required_parameter"


class InvalidJson(OpenAIError):
    code = "invalid_json"


class Unsupported(OpenAIError):
    code = "unsupported_value"


class ModelNotFound(NotFound):
    code = "model_not_found"


class TurnFailed(Exception):
    """A turn that started (the user's message is stored, maybe more) and then failed. Its
    error is answered with `x-should-retry: false`: a retry would be a second turn."""

    def __init__(self, failure: AppError) -> None:
        super().__init__(failure.message)
        self.failure = failure


def error_type(status: int) -> str:
    if status == 401:
        return "authentication_error"
    if status == 403:
        return "permission_error"
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


def error_body(status: int, code: str, message: str, param: str | None = None) -> dict[str, Any]:
    detail = ErrorDetail(
        message=message,
        type=error_type(status),
        param=param,
        code=code,
        request_id=request_id.current(),
    )
    return ErrorOut(error=detail).model_dump(mode="json")


def app_error_body(exc: AppError) -> dict[str, Any]:
    """What a client may see of `exc` (a 5xx keeps its code, not its internals)."""
    public = public_body(exc)
    param = exc.param if isinstance(exc, OpenAIError) else None
    return error_body(exc.status_code, str(public["code"]), str(public["message"]), param)


def error_response(exc: AppError, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        app_error_body(exc),
        status_code=exc.status_code,
        headers={**exc.headers(), **(headers or {})},
    )


def param_of(loc: tuple[int | str, ...] | list[int | str]) -> str | None:
    """A validation error's location as OpenAI names parameters: `messages[0].content`."""
    param = ""
    for part in loc:
        param += f"[{part}]" if isinstance(part, int) else f".{part}" if param else str(part)
    return param or None


def invalid_body(exc: RequestValidationError) -> OpenAIError:
    found = exc.errors()
    problems = []
    for error in found:
        where = param_of([p for p in error.get("loc", ()) if p != "body"])
        problems.append(f"{where or 'body'}: {error.get('msg', '')}")
    first = found[0] if found else {}
    param = param_of([p for p in first.get("loc", ()) if p != "body"])
    message = "The request is not valid: " + "; ".join(problems)
    # The offending input stays out of the message: it may be a secret the client sent.
    kind = first.get("type")
    if kind == "missing":
        return MissingParameter(message, param=param)
    if kind == "json_invalid":
        return InvalidJson("The body is not valid JSON.")
    return InvalidValue(message, param=param)


class OpenAIRoute(TextRoute):
    """A route whose errors, its dependencies' included (authentication, the body's
    validation), leave in OpenAI's shape."""

    error_model = ErrorOut  # what api/contract documents for its errors
    validation_status = 400

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await handle(request)
            except AppError as e:
                if e.status_code >= 500:
                    log.error("%s %s failed: %s (%s)", request.method, request.url.path, e.code, e)
                return error_response(e)
            except TurnFailed as e:
                return error_response(e.failure, NO_RETRY)
            except RequestValidationError as e:
                return error_response(invalid_body(e))
            except HTTPException:  # the framework's own (none is raised here): as usual
                raise
            except Exception:
                log.exception("%s %s failed", request.method, request.url.path)
                return error_response(AppError("unexpected failure"))

        return handler
