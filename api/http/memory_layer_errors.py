"""Seed 004's errors: `{"success": false, "message": ...}`, with our `code` (and details)
beside them. A route class, so that every error of these routes (validation, auth, the
services' own) takes that shape, and no other route's does."""

import json
from collections.abc import Callable, Coroutine
from typing import Any, Literal

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from api.errors import AppError
from api.http import errors as error_handlers
from api.http.contract.errors import ErrorBody
from api.http.unicode_body import TextRoute


def seed_shaped(response: Response) -> JSONResponse:
    body = json.loads(bytes(response.body))
    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
    return JSONResponse(
        {"success": False, **body}, status_code=response.status_code, headers=headers
    )


class SeedErrorBody(ErrorBody):
    """Seed 004's error body: `success: false` and a message, with our `code`, the
    request's id and any details beside them."""

    success: Literal[False] = False


class SeedErrorRoute(TextRoute):
    error_model = SeedErrorBody  # what api/contract documents for its errors

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except AppError as e:
                return seed_shaped(await error_handlers.app_error(request, e))
            except RequestValidationError as e:
                return seed_shaped(await error_handlers.validation_error(request, e))

        return handle
