"""The form schema and the PUT agree: the form's own constraints, fed back to the API,
are accepted exactly when the form says they are valid."""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.forms import FormField
from api.main import create_app

MISSING = object()
VALID_BODIES: dict[str, dict[str, Any]] = {
    "openai": {"api_key": "sk-valid-key"},
    "anthropic": {"api_key": "sk-ant-valid"},
    "bedrock": {
        "region": "us-east-1",
        "access_key_id": "AKIAABCDEFGHIJKLMNOP",
        "secret_access_key": "s" * 20,
    },
}
# Values matching a field's pattern, which cannot be derived from the pattern in general.
SAMPLES = {"region": "eu-west-1", "access_key_id": "AKIAZZZZZZZZZZZZZZZZ"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(sqlite_path=tmp_path / "f.db", encryption_key="k" * 40)
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


def candidates(field: FormField) -> Iterator[Any]:
    """Values at and across every boundary the form declares."""
    v = field.validation
    yield MISSING
    yield None
    if field.type == "url":
        yield "http://127.0.0.1:9/v1"
        yield "not a url"
        return
    base = SAMPLES.get(field.name, "x")
    if v.pattern:
        assert re.search(v.pattern, base), f"sample for {field.name} must match its pattern"
        yield base
        yield "!! not matching !!"
        return
    if v.min_length is not None:
        yield "a" * max(v.min_length - 1, 0)
        yield "a" * v.min_length
    if v.max_length is not None:
        yield "a" * v.max_length
        yield "a" * (v.max_length + 1)
    yield base


def form_accepts(field: FormField, value: Any) -> bool:
    if value is MISSING or (field.secret and value == ""):
        return not field.required
    if value is None:
        return field.nullable
    v = field.validation
    if not isinstance(value, str):
        return False
    if v.min_length is not None and len(value) < v.min_length:
        return False
    if v.max_length is not None and len(value) > v.max_length:
        return False
    if v.pattern and not re.search(v.pattern, value):
        return False
    return field.type != "url" or re.match(r"^https?://[^\s/]+", value) is not None


def test_every_configurable_provider_has_a_form(client: TestClient) -> None:
    forms = {p["name"]: p for p in client.get("/settings/providers/schema").json()["providers"]}
    assert set(forms) == {"openai", "anthropic", "bedrock", "offline"}
    assert forms["offline"]["configurable"] is False
    api_key = next(f for f in forms["openai"]["fields"] if f["name"] == "api_key")
    assert api_key["secret"] is True
    assert api_key["required"] is True
    assert api_key["label"] == "API key"
    region = next(f for f in forms["bedrock"]["fields"] if f["name"] == "region")
    assert region["default"] == "us-east-1"
    assert region["validation"]["pattern"]


@pytest.mark.parametrize("provider", sorted(VALID_BODIES))
def test_the_form_and_the_put_agree(client: TestClient, provider: str) -> None:
    schema = client.get("/settings/providers/schema").json()["providers"]
    fields = [
        FormField.model_validate(f) for p in schema if p["name"] == provider for f in p["fields"]
    ]
    assert fields
    checked = 0
    for field in fields:
        for value in candidates(field):
            client.delete(f"/settings/providers/{provider}")  # no stored secret to fall back on
            body = dict(VALID_BODIES[provider])
            if value is MISSING:
                body.pop(field.name, None)
            else:
                body[field.name] = value
            if (
                provider == "bedrock"
                and field.name in ("access_key_id", "secret_access_key")
                and value in (MISSING, None)
            ):
                # The pair goes together (a rule across fields): drop both.
                body.pop("access_key_id", None)
                body.pop("secret_access_key", None)
            response = client.put(f"/settings/providers/{provider}", json=body)
            expected = form_accepts(field, value) or (
                provider == "bedrock"
                and field.name in ("access_key_id", "secret_access_key")
                and value in (MISSING, None)
            )
            assert (response.status_code == 200) == expected, (field.name, value, response.text)
            if response.status_code != 200:
                assert response.status_code == 422
            checked += 1
    assert checked >= 3 * len(fields)
