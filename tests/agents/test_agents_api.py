"""/agents over HTTP."""

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.agents import service as agents_service
from api.config import Settings
from api.main import create_app


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(sqlite_path=tmp_path / "a.db", encryption_key="k" * 40)
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


def test_create_get_list_update_delete(client: TestClient) -> None:
    created = client.post("/agents", json={"name": "Helper", "persona": "Kind and brief."})
    assert created.status_code == 201, created.text
    agent = created.json()
    assert agent["architecture"] == "krishna-memgpt"
    assert agent["provider"] == "offline"
    assert agent["event_expiry_days"] == 7
    again = client.post("/agents", json={"name": "helper"})
    assert again.status_code == 200
    assert again.json()["id"] == agent["id"]

    assert client.get(f"/agents/{agent['id']}").json()["persona"] == "Kind and brief."
    assert [a["id"] for a in client.get("/agents").json()] == [agent["id"]]

    renamed = client.patch(f"/agents/{agent['id']}", json={"name": "Sage", "event_expiry_days": 0})
    assert renamed.status_code == 200
    assert renamed.json()["name"] == "Sage"
    assert renamed.json()["event_expiry_days"] == 0
    # The old name is free again, the new one is taken.
    other = client.post("/agents", json={"name": "Helper"}).json()
    assert other["id"] != agent["id"]
    taken = client.patch(f"/agents/{other['id']}", json={"name": "sage"})
    assert taken.status_code == 409
    assert taken.json()["code"] == "agent_name_taken"
    assert client.get(f"/agents/{other['id']}").json()["name"] == "Helper"

    assert client.delete(f"/agents/{agent['id']}").status_code == 204
    gone = client.get(f"/agents/{agent['id']}")
    assert gone.status_code == 404
    assert gone.json()["code"] == "agent_not_found"
    assert client.post("/agents", json={"name": "Sage"}).status_code == 201  # free again


def test_bad_choices_are_refused(client: TestClient) -> None:
    bad_arch = client.post("/agents", json={"name": "A", "architecture": "letta-v2"})
    assert bad_arch.status_code == 400
    assert bad_arch.json()["code"] == "unknown_architecture"
    unconfigured = client.post("/agents", json={"name": "B", "provider": "anthropic"})
    assert unconfigured.status_code == 400
    assert unconfigured.json()["code"] == "provider_not_configured"
    for body in ({"name": ""}, {"name": "C", "event_expiry_days": -1}, {"name": "D", "x": 1}):
        response = client.post("/agents", json=body)
        assert response.status_code == 422
        assert response.json()["code"] == "validation_error"
    assert client.get("/agents").json() == []
    assert client.patch("/agents/nope", json={"name": "x"}).status_code == 404


def test_the_form_lists_architectures_providers_and_models(client: TestClient) -> None:
    client.put(
        "/settings/providers/openai",
        json={"api_key": "sk-test-123456", "base_url": "http://127.0.0.1:9/v1"},
    )
    form = client.get("/agents/schema").json()
    fields = {f["name"]: f for f in form["fields"]}
    assert [o["value"] for o in fields["architecture"]["options"]] == [
        "krishna-memgpt",
        "categorized-memory",
    ]
    assert [o["value"] for o in fields["provider"]["options"]] == ["offline", "openai"]
    assert fields["name"]["required"] is True
    assert fields["event_expiry_days"]["validation"]["minimum"] == 0
    assert form["models"]["offline"] == ["offline-demo"]
    assert "openai" in form["notes"]  # nothing listens on port 9: said, not fatal


def test_the_form_at_once_then_each_providers_models(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A provider that takes the connection and never answers (a listening socket nobody
    # accepts from): it holds up only its own listing, for MODEL_LISTING_SECONDS at most.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    monkeypatch.setattr(agents_service, "MODEL_LISTING_SECONDS", 0.5)
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
    client.put("/settings/providers/openai", json={"api_key": "sk-test-123456", "base_url": url})
    try:
        form = client.get("/agents/schema", params={"models": "false"}).json()
        providers = [
            o["value"] for f in form["fields"] if f["name"] == "provider" for o in f["options"]
        ]
        assert providers == ["offline", "openai"]
        assert form["models"] == {}
        assert form["notes"] == {}

        offline = client.get("/agents/schema/models/offline")
        assert offline.status_code == 200, offline.text
        assert offline.json() == {"provider": "offline", "models": ["offline-demo"], "note": None}
        openai = client.get("/agents/schema/models/openai").json()
        assert openai["models"] == []
        assert openai["note"] == "The provider did not answer in time."
    finally:
        silent.close()

    unconfigured = client.get("/agents/schema/models/anthropic")
    assert unconfigured.status_code == 404
    assert unconfigured.json()["code"] == "provider_not_configured"
    unknown = client.get("/agents/schema/models/cohere")
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "unknown_provider"


def test_a_blank_name_and_a_second_delete(client: TestClient) -> None:
    blank = client.post("/agents", json={"name": "   "})
    assert blank.status_code == 422
    agent = client.post("/agents", json={"name": "Once"}).json()
    assert client.delete(f"/agents/{agent['id']}").status_code == 204
    assert client.delete(f"/agents/{agent['id']}").status_code == 404


def test_a_new_persona_is_what_the_model_sees(client: TestClient) -> None:
    created = client.post("/agents", json={"name": "Persona", "persona": "Kind\nBrief"})
    agent = created.json()["id"]
    persona = f"/agents/{agent}/memory/blocks/persona"
    assert client.get(persona).json()["lines"] == ["Kind", "Brief"]
    changed = client.patch(f"/agents/{agent}", json={"persona": "Curious\nPrecise"})
    assert changed.status_code == 200
    assert changed.json()["persona"] == "Curious\nPrecise"
    assert client.get(persona).json()["lines"] == ["Curious", "Precise"]
    # A persona the block cannot hold is refused before the agent is saved.
    assert client.patch(persona, json={"word_limit": 3}).status_code == 200
    too_long = client.patch(f"/agents/{agent}", json={"persona": "one two three four"})
    assert too_long.status_code == 409
    assert too_long.json()["code"] == "block_full"
    assert client.get(f"/agents/{agent}").json()["persona"] == "Curious\nPrecise"
    assert client.get(persona).json()["lines"] == ["Curious", "Precise"]


def test_a_taken_name_leaves_the_persona_unchanged(client: TestClient) -> None:
    client.post("/agents", json={"name": "Taken"})
    agent = client.post("/agents", json={"name": "Mine", "persona": "Kind\nBrief"}).json()["id"]
    refused = client.patch(f"/agents/{agent}", json={"name": "taken", "persona": "Grumpy"})
    assert refused.status_code == 409
    assert refused.json()["code"] == "agent_name_taken"
    assert client.get(f"/agents/{agent}").json()["persona"] == "Kind\nBrief"
    persona = client.get(f"/agents/{agent}/memory/blocks/persona").json()
    assert persona["lines"] == ["Kind", "Brief"]
