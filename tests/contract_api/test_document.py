"""The OpenAPI document, read as a generated client reads it: every operation documents its
errors with a named error schema, every error a route can raise has its status documented
somewhere, the turn streams document each event as docs/sse.md lists it, and a real turn's
stream matches what is documented, event by event."""

import dataclasses
import importlib
import json
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs
from fastapi import FastAPI, routing
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

import api
from api.errors import AppError
from api.http.contract import streams
from api.http.contract.document import behind_sign_in
from api.http.contract.errors import STATUSES
from api.idempotency.errors import KEY_PATTERN

DOCS = Path(__file__).resolve().parents[2] / "docs"
ERROR_SCHEMAS = {
    "#/components/schemas/ErrorBody",
    "#/components/schemas/SeedErrorBody",
    "#/components/schemas/ErrorOut",
}
# Raised outside any documented operation: /metrics is not in the document (it answers
# Prometheus, not API clients), and sign-in's failures are redirects to the frontend.
NOT_ANSWERED_BY_OPERATIONS = {"metrics_forbidden", "metrics_unauthorized", "nonce_replayed"}


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, methods in doc["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", operation


def error_refs(answer: dict[str, Any]) -> set[str]:
    schema = answer.get("content", {}).get("application/json", {}).get("schema", {})
    options = schema.get("anyOf", [schema])
    return {option.get("$ref", "") for option in options}


def test_every_operation_documents_its_errors_with_an_error_schema(
    openapi: dict[str, Any],
) -> None:
    assert len(list(operations(openapi))) > 40
    for name, operation in operations(openapi):
        errors = {s: a for s, a in operation["responses"].items() if s[0] in "45"}
        assert errors, f"{name} documents no error"
        for status, answer in errors.items():
            refs = error_refs(answer)
            assert refs, f"{name} {status} has no body"
            assert refs <= ERROR_SCHEMAS, f"{name} {status}: {refs}"
            assert answer["description"], f"{name} {status} says nothing"
        # What every operation can answer: a body or headers too large, a failure of ours,
        # the store unavailable; and in local mode a Host or Origin refused.
        assert {"403", "413", "431", "500", "503"} <= set(errors), name


def test_writes_document_the_idempotency_refusals(openapi: dict[str, Any]) -> None:
    for name, operation in operations(openapi):
        if name.split()[0] in ("POST", "PUT", "PATCH", "DELETE"):
            assert {"400", "409", "422"} <= set(operation["responses"]), name


def test_every_write_the_idempotency_layer_takes_declares_the_key(
    openapi: dict[str, Any],
) -> None:
    """Every write but sign-in's and the import (passed through) takes an Idempotency-Key,
    with parse_key's rule as its pattern."""
    for name, operation in operations(openapi):
        method, path = name.split(" ", 1)
        if method not in {"POST", "PUT", "PATCH", "DELETE"}:
            continue
        declared = [
            p
            for p in operation.get("parameters", ())
            if p["in"] == "header" and p["name"] == "Idempotency-Key"
        ]
        if path.startswith(("/auth/", "/agents/import")):
            assert declared == [], name
        else:
            assert len(declared) == 1, name
            assert declared[0]["schema"]["pattern"] == KEY_PATTERN, name


def test_framework_validation_errors_are_replaced_by_ours(openapi: dict[str, Any]) -> None:
    assert "HTTPValidationError" not in json.dumps(openapi)
    validation = openapi["paths"]["/agents"]["post"]["responses"]["422"]
    assert error_refs(validation) == {"#/components/schemas/ErrorBody"}
    # /v1 answers a body it cannot read with 400 in OpenAI's shape, as OpenAI does.
    completions = openapi["paths"]["/v1/chat/completions"]["post"]["responses"]
    assert "#/components/schemas/ErrorOut" in error_refs(completions["400"])
    # /memory/* answers in seed 004's shape, middlewares' refusals in the common one.
    seed = openapi["paths"]["/memory/context"]["get"]["responses"]
    assert error_refs(seed["404"]) == {"#/components/schemas/SeedErrorBody"}
    assert error_refs(seed["413"]) == {"#/components/schemas/ErrorBody"}


def test_the_error_schemas_carry_the_request_id(openapi: dict[str, Any]) -> None:
    schemas = openapi["components"]["schemas"]
    for name in ("ErrorBody", "SeedErrorBody"):
        assert {"code", "message", "request_id"} <= set(schemas[name]["required"]), name
    assert "request_id" in schemas["ErrorDetail"]["properties"]


def test_operations_behind_sign_in_document_401(app: FastAPI, openapi: dict[str, Any]) -> None:
    signed_in = 0
    for context in routing.iter_route_contexts(app.routes):
        route = context.original_route
        if not isinstance(route, APIRoute) or not context.include_in_schema:
            continue
        if behind_sign_in(route.dependant):
            signed_in += 1
            for method in context.methods or ():
                operation = openapi["paths"][context.path_format][method.lower()]
                assert "401" in operation["responses"], f"{method} {context.path_format}"
    assert signed_in > 40


def app_errors() -> list[type[AppError]]:
    for module in pkgutil.walk_packages(api.__path__, "api."):
        importlib.import_module(module.name)
    found: list[type[AppError]] = []
    pending = [AppError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def test_every_status_an_error_carries_is_documented(openapi: dict[str, Any]) -> None:
    """A new error class with a status no operation documents (or no description of its
    status) fails here: document it where it is raised, with `errors(...)`."""
    documented = {
        int(status)
        for _, operation in operations(openapi)
        for status in operation["responses"]
        if status[0] in "45"
    }
    for cls in app_errors():
        if cls.code in NOT_ANSWERED_BY_OPERATIONS:
            continue
        assert cls.status_code in STATUSES, f"{cls.__name__}: describe {cls.status_code}"
        assert cls.status_code in documented, f"{cls.__name__}: {cls.status_code}"


def test_documented_codes_are_the_codes_of_real_errors(openapi: dict[str, Any]) -> None:
    codes = {cls.code for cls in app_errors()}
    for name, operation in operations(openapi):
        for status, answer in operation["responses"].items():
            for code in re.findall(r"`([a-z_]+)`", answer.get("description", "")):
                if code in ("false", "details", "true"):
                    continue
                assert code in codes or code in HTTP_LEVEL_CODES, f"{name} {status}: {code}"


HTTP_LEVEL_CODES = {"payload_too_large", "request_headers_too_large", "validation_error"}
HTTP_LEVEL_CODES |= {"host_rejected", "origin_rejected", "internal_error"}


# --- the turn streams --------------------------------------------------------------------


def sse_events_in_docs() -> set[str]:
    table = (DOCS / "sse.md").read_text()
    return set(re.findall(r"^\| `([a-z.]+)` \|", table, re.MULTILINE))


def test_docs_and_contract_name_the_same_events(openapi: dict[str, Any]) -> None:
    sent = {cls.EVENT for cls in streams.event_classes()}
    assert sent == sse_events_in_docs()
    for path, method in [("/chat", "post"), ("/runs/{run_id}/events", "get")]:
        content = openapi["paths"][path][method]["responses"]["200"]["content"]
        items = content["text/event-stream"]["itemSchema"]["oneOf"]
        assert {item["properties"]["event"]["const"] for item in items} == sent
    for cls in streams.event_classes():
        component = openapi["components"]["schemas"][streams.component_name(cls)]
        fields = set(component["properties"])
        assert fields == {f.name for f in dataclasses.fields(cls)}, cls.EVENT


def parse_sse(text: str) -> list[dict[str, str]]:
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line.startswith(":") or ":" not in line:
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        if fields:
            events.append(fields)
    return events


def test_a_real_turn_streams_what_the_contract_documents(
    client: TestClient, openapi: dict[str, Any]
) -> None:
    agent = client.post("/agents", json={"name": "Streamed"}).json()["id"]
    turn = client.post("/chat", json={"agent_id": agent, "prompt": "My name is Alice."})
    assert turn.status_code == 200, turn.text
    assert turn.headers["content-type"].startswith("text/event-stream")
    content = openapi["paths"]["/chat"]["post"]["responses"]["200"]["content"]
    item_schema = content["text/event-stream"]["itemSchema"]
    # Validated where they stand in the document, so that its references resolve.
    within = {"components": openapi["components"]}
    components = {cls.EVENT: streams.component_name(cls) for cls in streams.event_classes()}
    events = parse_sse(turn.text)
    assert events[0]["event"] == "run.started"
    assert events[-1]["event"] == "run.completed"
    for event in events:
        jsonschema_rs.validate({**within, **item_schema}, event)
        component = components[event["event"]]
        schema = {**within, "$ref": f"#/components/schemas/{component}"}
        jsonschema_rs.validate(schema, json.loads(event["data"]))
