"""Request schemas say exactly what the server takes: the patterns the document gives
names and headers accept the values their parsers accept, and refuse the others; booleans
and integers are strict; what the document says takes null does, and what it does not
offer null for refuses it."""

import asyncio
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.http.middleware.idempotency import parse_key
from api.http.preconditions import InvalidPrecondition, if_match
from api.http.runs import InvalidLastEventId, _after
from api.idempotency.errors import InvalidIdempotencyKey
from api.kit.text import VISIBLE_PATTERN, WHITESPACE, name_pattern, plain_name, visible

# Values around each rule's edges: empty, blank, quotes, spaces, control and invisible
# characters, non-ASCII, lengths at and past the limits.
HEADER_VALUES = [
    "", " ", "a", '"', '""', '"a"', '" "', "a b", " a ", "\x7f", "é", "a\x00", "*", " * ",
    "3", '"3"', 'W/"3"', " 3 ", "-3", "3.0", "null", "1234567890", "123456789",
    "9" * 18, "9" * 19, "k" * 255, "k" * 256, '"' + "k" * 255 + '"', '"' + "k" * 256 + '"',
    '"' + "k" * 254 + '"', "\tab", "a\tb",
]  # fmt: skip
NAMES = ["a", " ", "", " a ", "a\x7f", "\u200bx", "\u00a0", "\u00a0b", "Ω", "a\nb", "😀", "\u3000"]


def parameter(doc: dict[str, Any], path: str, method: str, name: str) -> dict[str, Any]:
    found = [p for p in doc["paths"][path][method]["parameters"] if p["name"] == name]
    assert len(found) == 1, name
    schema: dict[str, Any] = found[0]["schema"]
    return schema


def matches(schema: dict[str, Any], value: str) -> bool:
    return re.search(schema["pattern"], value) is not None


def test_idempotency_key_is_declared_as_the_middleware_parses_it(
    openapi: dict[str, Any],
) -> None:
    schema = parameter(openapi, "/chat", "post", "Idempotency-Key")
    assert schema["type"] == "string"  # left out, never null
    for value in HEADER_VALUES:
        try:
            parse_key([value.encode("latin-1", "replace")])
            accepted = True
        except InvalidIdempotencyKey:
            accepted = False
        # Spaces around a value are no part of it (HTTP strips them); none are generated.
        if value == value.strip():
            assert matches(schema, value) == accepted, repr(value)


def test_if_match_is_declared_as_it_is_parsed(openapi: dict[str, Any]) -> None:
    schema = parameter(openapi, "/agents/{agent_id}/memory/blocks/{block}", "patch", "If-Match")
    for value in HEADER_VALUES:
        try:
            asyncio.run(if_match(value))
            accepted = True
        except InvalidPrecondition:
            accepted = False
        if value == value.strip() and value.isascii():
            assert matches(schema, value) == accepted, repr(value)


def test_last_event_id_is_declared_as_it_is_parsed(openapi: dict[str, Any]) -> None:
    schema = parameter(openapi, "/runs/{run_id}/events", "get", "Last-Event-ID")
    for value in HEADER_VALUES:
        try:
            _after(value)
            accepted = True
        except InvalidLastEventId:
            accepted = False
        if value == value.strip() and value.isascii():
            assert matches(schema, value) == accepted, repr(value)


@pytest.mark.parametrize("value", NAMES)
def test_the_name_pattern_is_the_name_rule(value: str) -> None:
    try:
        plain_name(value)
        accepted = True
    except ValueError:
        accepted = False
    assert (re.search(name_pattern(), value) is not None) == accepted


def test_names_in_the_document_carry_the_rule(openapi: dict[str, Any]) -> None:
    schemas = openapi["components"]["schemas"]
    assert schemas["AgentCreate"]["properties"]["name"]["pattern"] == name_pattern()
    metadata = schemas["AgentCreate"]["properties"]["metadata"]["anyOf"]
    assert {"type": "null"} in metadata  # null is taken, as empty
    assert metadata[0]["propertyNames"] == {"pattern": name_pattern()}
    # A field of a PATCH is changed, never emptied: no null is offered.
    assert "null" not in str(schemas["AgentUpdate"])


def test_booleans_and_integers_are_strict(client: TestClient) -> None:
    agent = client.post("/agents", json={"name": "strict"})
    assert agent.status_code == 201
    refused = client.post(
        "/chat", json={"agent_id": agent.json()["id"], "prompt": "hi", "stream": 0}
    )
    assert refused.status_code == 422
    assert refused.json()["code"] == "validation_error"
    assert client.post("/agents", json={"name": "strict2", "recent_turns": True}).status_code == 422
    seed004 = client.post("/memory/initialize", json={"user_id": "strict", "reset": 1})
    assert seed004.status_code == 422
    assert seed004.json()["success"] is False
    openai = client.post(
        "/v1/chat/completions",
        json={"model": "strict", "messages": [{"role": "user", "content": "hi"}], "stream": 0},
    )
    assert openai.status_code == 400
    assert openai.json()["error"]["param"] == "stream"


def test_a_whole_float_past_the_integers_comes_back_a_float(client: TestClient) -> None:
    """1e39 sent as a float is stored whole; read back it stays a float, so that what the
    API answers (an export included) is taken again when sent back."""
    created = client.post("/agents", json={"name": "big", "metadata": {"n": 1e39, "m": 7.0}})
    assert created.status_code == 201
    agent = client.get(f"/agents/{created.json()['id']}").json()
    assert agent["metadata"] == {"n": 1e39, "m": 7}
    again = client.post("/agents", json={"name": "big again", "metadata": agent["metadata"]})
    assert again.status_code == 201
    exported = client.get(f"/agents/{agent['id']}/export")
    assert exported.status_code == 200
    assert "1e+39" in exported.text


def test_the_visible_pattern_refuses_exactly_what_visible_refuses() -> None:
    """A message's content: the document's pattern and the validator agree on every
    whitespace character of Python's and of JSON Schema's (ECMA) regexes."""
    everything = {chr(c) for c in range(0x110000)}
    assert set(WHITESPACE) == {c for c in everything if c.isspace()}
    documented = re.compile(VISIBLE_PATTERN)
    for text in [*NAMES, "\x1c", " \x85 ", "\ufeff", "\u180e", "\t\n", "x", " x "]:
        try:
            visible(text)
            taken = True
        except ValueError:
            taken = False
        assert bool(documented.search(text)) == taken, repr(text)
