"""The OpenAPI document made complete where routes cannot say it themselves: the statuses
the middlewares answer on every operation (a body too large, a bad Idempotency-Key, ...),
401 wherever a route depends on the signed-in user, the validation error in the shape each
route answers it, the error and event schemas as components, and the X-Request-ID header
on every answer. Routes and routers document their own statuses with `errors(...)`."""

from collections.abc import Iterator
from typing import Any, get_args

from fastapi import FastAPI, routing
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel

from api.http.contract import streams
from api.http.contract.errors import ErrorBody, describe
from api.http.deps.auth import CurrentUser, current_user
from api.http.middleware.idempotency import PASSED_THROUGH
from api.idempotency.errors import KEY_PATTERN

REF = "#/components/schemas/"
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# RequestLimits (413, 431), the error handler of last resort (500), the store (503).
EVERY_OPERATION = (413, 431, 500, 503)
# The Idempotency middleware on writes: a malformed key, one reused for another request,
# one whose first request is still running.
ON_WRITES = (400, 409, 422)
LOCAL_GUARD = 403  # LocalModeGuard: a Host or Origin not the server's own
FASTAPI_VALIDATION = REF + "HTTPValidationError"

REQUEST_ID = {
    "description": "The request's id: the one sent when well-formed, made otherwise.",
    "schema": {"type": "string"},
}
REQUEST_ID_HEADER = {"X-Request-ID": {"$ref": "#/components/headers/X-Request-ID"}}
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Sent again with the same key, the request gets the first answer rather "
    "than being done twice (docs/idempotency.md). 1 to 255 printable ASCII characters, "
    'quoted or not (`"abc"` is `abc`).',
    "schema": {"type": "string", "pattern": KEY_PATTERN},
}


def install(app: FastAPI, *, local_mode: bool) -> None:
    """`app.openapi()` completed, once, when first asked for."""
    generate = app.openapi
    completed: list[dict[str, Any]] = []  # the document last completed

    def openapi() -> dict[str, Any]:
        doc = generate()  # FastAPI's, made again when routes were added since
        if not completed or completed[0] is not doc:
            complete(app, doc, local_mode=local_mode)
            completed[:] = [doc]
        return doc

    app.openapi = openapi  # type: ignore[method-assign]


def complete(app: FastAPI, doc: dict[str, Any], *, local_mode: bool) -> None:
    components = doc.setdefault("components", {})
    schemas: dict[str, Any] = components.setdefault("schemas", {})
    components.setdefault("headers", {})["X-Request-ID"] = REQUEST_ID
    add_model(schemas, ErrorBody)
    for name, schema in streams.event_components().items():
        if schemas.setdefault(name, schema) != schema:
            raise ValueError(f"two schemas are named {name} in the OpenAPI document")
    everywhere = (*EVERY_OPERATION, LOCAL_GUARD) if local_mode else EVERY_OPERATION
    for context in routing.iter_route_contexts(app.routes):
        route = context.original_route
        if not isinstance(route, APIRoute) or not context.include_in_schema:
            continue
        own: type[BaseModel] = getattr(route, "error_model", ErrorBody)
        validation_status: int = getattr(route, "validation_status", 422)
        add_model(schemas, own)
        signed_in = behind_sign_in(route.dependant)
        for method in context.methods or ():
            operation = doc["paths"].get(context.path_format, {}).get(method.lower())
            if operation is None:
                continue
            if method in WRITES and not (context.path_format or "").startswith(PASSED_THROUGH):
                _declare_idempotency_key(operation)
            for parameter in operation.get("parameters", ()):
                _absent_not_null(parameter)
            responses: dict[str, Any] = operation["responses"]
            if _is_fastapi_validation(responses.get("422")):
                del responses["422"]
                document(responses, validation_status, own)
            if signed_in:
                document(responses, 401, own)
            for status in (*everywhere, *(ON_WRITES if method in WRITES else ())):
                document(responses, status, ErrorBody)
            for answer in responses.values():
                answer.setdefault("headers", {}).update(REQUEST_ID_HEADER)
    if FASTAPI_VALIDATION not in str(doc["paths"]):
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)


def _declare_idempotency_key(operation: dict[str, Any]) -> None:
    """The middleware takes the header on every write; the turn routes declare it
    themselves, with what it means for a stream."""
    parameters: list[dict[str, Any]] = operation.setdefault("parameters", [])
    if not any(p.get("in") == "header" and p.get("name") == "Idempotency-Key" for p in parameters):
        parameters.append(IDEMPOTENCY_KEY)


def add_model(schemas: dict[str, Any], model: type[BaseModel]) -> None:
    """`model` as a component under its name (FastAPI's own naming when it put it there)."""
    if model.__name__ in schemas:
        return
    schema = model.model_json_schema(ref_template=REF + "{model}", mode="serialization")
    for name, nested in schema.pop("$defs", {}).items():
        schemas.setdefault(name, nested)
    schemas[model.__name__] = schema


def document(responses: dict[str, Any], status: int, model: type[BaseModel]) -> None:
    """`status` answered with `model`: added, or, where the route documents another body
    for it, either body (a middleware answers before the route's own shape applies)."""
    ref = {"$ref": REF + model.__name__}
    answer = responses.setdefault(str(status), {"description": describe(status, [])})
    media = answer.setdefault("content", {}).setdefault("application/json", {})
    schema = media.get("schema")
    if schema is None:
        media["schema"] = ref
    elif schema != ref:
        options = schema["anyOf"] if list(schema) == ["anyOf"] else [schema]
        if ref not in options:
            media["schema"] = {"anyOf": [*options, ref]}


def _absent_not_null(parameter: dict[str, Any]) -> None:
    """An optional parameter declared `str | None` is left out, never null: HTTP has no
    null, and a client sending one sends the text "null", which the server refuses."""
    schema = parameter.get("schema", {})
    options = [o for o in schema.get("anyOf", ()) if o != {"type": "null"}]
    if "anyOf" in schema and len(options) == 1:
        del schema["anyOf"]
        schema.update(options[0])
    elif "anyOf" in schema:
        schema["anyOf"] = options


def behind_sign_in(dependant: Dependant) -> bool:
    """Whether the route depends on the signed-in user: on current_user, or on what
    `CurrentUser` resolves it through (a wrapper that reads its inputs from the request)."""
    through = [m.dependency for m in get_args(CurrentUser)[1:] if hasattr(m, "dependency")]
    return any(requires(dependant, call) for call in (current_user, *through))


def requires(dependant: Dependant, call: object) -> bool:
    return any(d.call is call for d in _dependencies(dependant))


def _dependencies(dependant: Dependant) -> Iterator[Dependant]:
    for sub in dependant.dependencies:
        yield sub
        yield from _dependencies(sub)


def _is_fastapi_validation(answer: dict[str, Any] | None) -> bool:
    return answer is not None and FASTAPI_VALIDATION in str(answer.get("content"))
