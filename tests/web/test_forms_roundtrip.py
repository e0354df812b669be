"""Every form the backend serves is accepted by its own POST/PUT when filled as its schema
says, as the web app's form renderer fills it (defaults, the first option, a value meeting
each rule; JSON fields parsed)."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.agents.schemas import AgentCreate
from api.config import Settings
from api.kit.forms import form_of
from api.main import create_app

# Values for required fields the schema gives no default, by type; each meets the form's rules.
SAMPLES: dict[str, Any] = {
    "string": "Filled",
    "text": "Filled in",
    "url": "http://127.0.0.1:9/v1",
}  # no lookup
# A text field's sample for a field with a pattern (the renderer checks the pattern too).
PATTERNED: dict[str, str] = {
    "region": "eu-west-1",
    "access_key_id": "AKIAABCDEFGHIJKLMNOP",
    "name": "Filled in",  # an agent's name: visible characters only
}


def filled(fields: list[dict[str, Any]], *, optional_too: bool) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for field in fields:
        name, kind = field["name"], field["type"]
        if kind == "json":
            body[name] = {"filled": ["from", "the", "schema"]}
        elif kind == "multiselect":  # the first option, if any (an agent's specialists)
            body[name] = [o["value"] for o in field["options"][:1]]
        elif kind == "select":
            body[name] = (
                field["default"] if field["default"] is not None else field["options"][0]["value"]
            )
        elif field["default"] is not None:
            body[name] = field["default"]
        elif field["required"] or optional_too:
            if field["validation"]["pattern"]:
                body[name] = PATTERNED[name]
            elif field["secret"]:
                body[name] = "s" * max(16, field["validation"]["min_length"] or 0)
            elif kind in ("integer", "number"):
                body[name] = field["validation"]["minimum"] or 0
            elif kind == "boolean":
                body[name] = True
            else:
                body[name] = SAMPLES[kind]
    return body


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(sqlite_path=tmp_path / "f.db", encryption_key="k" * 40)
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


@pytest.mark.parametrize("optional_too", [False, True])
def test_every_provider_form_is_accepted_by_its_put(client: TestClient, optional_too: bool) -> None:
    providers = client.get("/settings/providers/schema").json()["providers"]
    configurable = [p for p in providers if p["configurable"]]
    assert {p["name"] for p in configurable} >= {"openai", "anthropic", "bedrock"}
    for provider in configurable:
        body = filled(provider["fields"], optional_too=optional_too)
        saved = client.put(f"/settings/providers/{provider['name']}", json=body)
        assert saved.status_code == 200, (provider["name"], body, saved.text)


def test_the_agent_form_is_accepted_by_post_agents(client: TestClient) -> None:
    form = client.get("/agents/schema").json()
    fields = {f["name"]: f for f in form["fields"]}
    assert fields["metadata"]["type"] == "json"  # was "string", which POST /agents refused
    assert fields["persona"]["type"] == "text"
    for optional_too in (False, True):
        body = filled(form["fields"], optional_too=optional_too)
        body["name"] = f"Filled {optional_too}"
        created = client.post("/agents", json=body)
        assert created.status_code == 201, (body, created.text)
        assert created.json()["metadata"] == {"filled": ["from", "the", "schema"]}
        # The same form edits it: PATCH takes what the form sends.
        edited = client.patch(f"/agents/{created.json()['id']}", json={**body, "persona": ""})
        assert edited.status_code == 200, edited.text


def test_a_json_field_holding_text_is_refused_with_its_name(client: TestClient) -> None:
    refused = client.post("/agents", json={"name": "Text", "metadata": '{"a": 1}'})
    assert refused.status_code == 422
    assert refused.json()["details"]["errors"][0]["loc"] == ["body", "metadata"]
    assert client.get("/agents").json() == []


def test_free_json_types_are_json_fields() -> None:
    from pydantic import BaseModel, JsonValue

    class Anything(BaseModel):
        blob: JsonValue = None
        items: list[int] = []
        mapping: dict[str, str] | None = None
        count: int = 0

    kinds = {f.name: f.type for f in form_of(Anything).fields}
    assert kinds == {"blob": "json", "items": "json", "mapping": "json", "count": "integer"}
    assert {f.name: f.type for f in form_of(AgentCreate).fields}["metadata"] == "json"
