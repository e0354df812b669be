"""The memory inspector's forms (GET /agents/{id}/memory/schema) are the models their POSTs
validate: filled as they say, each is accepted; filled against a rule, refused by name."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        sqlite_path=tmp_path / "m.db", encryption_key="k" * 40, memory_embedding_backend="none"
    )
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


def by_name(form: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in form["fields"]}


def test_the_block_form_is_accepted_by_post_blocks(client: TestClient) -> None:
    agent = client.post("/agents", json={"name": "Forms"}).json()
    forms = client.get(f"/agents/{agent['id']}/memory/schema").json()
    block = by_name(forms["block"])
    assert list(block) == ["name", "description", "word_limit", "content"]
    assert block["name"]["required"]
    assert block["content"]["type"] == "text"
    assert block["word_limit"]["type"] == "integer"
    assert block["word_limit"]["default"] == 5000
    assert block["word_limit"]["validation"]["minimum"] == 1
    body = {
        "name": "Projects",
        "description": block["description"]["default"],
        "word_limit": int(block["word_limit"]["validation"]["minimum"]) + 99,  # JS sends 100
        "content": "Launch in May\nHire two people",
    }
    created = client.post(f"/agents/{agent['id']}/memory/blocks", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["lines"] == ["Launch in May", "Hire two people"]
    assert created.json()["word_limit"] == 100
    # Past the form's own maximum: refused, naming the field the form drew.
    too_big = {"name": "Other", "word_limit": int(block["word_limit"]["validation"]["maximum"]) + 1}
    refused = client.post(f"/agents/{agent['id']}/memory/blocks", json=too_big)
    assert refused.status_code == 422
    assert refused.json()["details"]["errors"][0]["loc"] == ["body", "word_limit"]
    assert [b["name"] for b in client.get(f"/agents/{agent['id']}/memory/blocks").json()] == [
        "human",
        "persona",
        "projects",
    ]


def test_the_archival_form_is_accepted_by_post_archival(client: TestClient) -> None:
    agent = client.post("/agents", json={"name": "Forms"}).json()
    archival = by_name(client.get(f"/agents/{agent['id']}/memory/schema").json()["archival"])
    assert archival["content"]["type"] == "text"
    assert archival["content"]["required"]
    assert archival["category"]["type"] == "select"
    assert archival["category"]["nullable"]
    assert archival["tags"]["type"] == "json"
    body = {
        "content": "Ada prefers tea",
        "category": archival["category"]["options"][0]["value"],
        "context": "said at breakfast",
        "confidence": archival["confidence"]["validation"]["maximum"],
        "tags": ["drinks"],
    }
    created = client.post(f"/agents/{agent['id']}/memory/archival", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["tags"] == ["drinks"]
    # Only what is required, the rest left out as the renderer leaves empty optional fields.
    plain = client.post(f"/agents/{agent['id']}/memory/archival", json={"content": "Plain"})
    assert plain.status_code == 201, plain.text


def test_another_tenants_agent_has_no_forms(client: TestClient) -> None:
    missing = client.get("/agents/no-such-agent/memory/schema")
    assert missing.status_code == 404
    assert missing.json()["code"] == "agent_not_found"
