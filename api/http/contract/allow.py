"""The `Allow` header of a 405, from every route of the path rather than the first one
Starlette tried (which named its own method only: `/agents/{agent_id}` answered a PUT with
`Allow: GET` although it takes GET, PATCH and DELETE).

A path that both a literal route and a parameter's route match (`/agents/schema`, and
`/agents/{agent_id}` with agent_id `schema`) is the literal one's, as in the OpenAPI
document, where each is its own path: its Allow lists the methods documented there."""

import re

from fastapi import FastAPI, Request, routing
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from api.http import errors as error_handlers


def allowed_methods(request: Request) -> list[str]:
    """The methods the routes of the request's path take, sorted."""
    path = request.scope["path"]
    by_template: dict[str, set[str]] = {}
    for route in routing.iter_route_contexts(request.app.router.routes):
        template, methods = route.path_format, route.methods
        pattern = getattr(route, "path_regex", None)
        if template and methods and isinstance(pattern, re.Pattern) and pattern.match(path):
            by_template.setdefault(template, set()).update(methods)
    if not by_template:
        return []
    fewest = min(template.count("{") for template in by_template)
    found: set[str] = set()
    for template, methods in by_template.items():
        if template.count("{") == fewest:
            found |= methods
    return sorted(found)


async def method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    allowed = allowed_methods(request)
    headers = {**(exc.headers or {}), **({"Allow": ", ".join(allowed)} if allowed else {})}
    refused = HTTPException(405, exc.detail, headers)
    return await error_handlers.http_error(request, refused)


def install(app: FastAPI) -> None:
    # By status: Starlette looks it up before the handler of HTTPException's class.
    app.add_exception_handler(405, method_not_allowed)
