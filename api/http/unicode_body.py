"""A JSON body whose text is not Unicode is refused as invalid, on every route.

JSON may spell a lone surrogate (`"\\ud800"`), which Python reads into a `str` that no
UTF-8 encoder takes: pydantic refuses it only in fields with constraints, so elsewhere
it reached the store's keys or the search engine and failed there (500). Every route of
ours is this route class (the Router default): a body whose bytes hold a surrogate escape
at all (rare: emoji sent as escapes come in pairs) is read once more to find a lone one,
and refused as a validation error naming where it is. Every route's error shape applies:
it is raised as FastAPI raises its own."""

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


def lone_surrogate(value: Any, path: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """Where in a decoded JSON value a string (or a key) is not Unicode text, if anywhere."""
    if isinstance(value, str):
        return None if _unicode(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            if not _unicode(key):
                return (*path, key.encode("utf-8", "backslashreplace").decode())
            found = lone_surrogate(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = lone_surrogate(item, (*path, i))
            if found is not None:
                return found
    return None


def _unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_json(request: Request) -> bool:
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


class TextRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            # The body is read here as FastAPI reads it for the route (and kept on the
            # request): a JSON body is read whole either way.
            if request.method in _WITH_BODY and _is_json(request):
                body = await request.body()
                if _SURROGATE_ESCAPE.search(body):
                    _refuse_lone_surrogates(body)
            return await handle(request)

        return handler


def _refuse_lone_surrogates(body: bytes) -> None:
    try:
        value = json.loads(body)
    except ValueError:
        return  # not JSON: the route refuses it as it does any such body
    where = lone_surrogate(value)
    if where is not None:
        raise RequestValidationError(
            [
                {
                    "type": "string_unicode",
                    "loc": ("body", *where),
                    "msg": "Text must be valid Unicode: it holds a lone surrogate",
                }
            ]
        )
