"""Names and numbers as a person means them: no control or invisible characters in names,
titles, block names and metadata keys; no `false` where a number is asked for."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.runtime.conftest import new_agent, running


@pytest.fixture
def client(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    with running(Settings(sqlite_path=tmp_path / "n.db", encryption_key="k" * 40), clock) as c:
        yield c


NOT_NAMES = ["Kit\x00", "Kit\u202egnp.exe", "\u200b\u200b", "Line\nbreak", "   ", "\u2066x"]


@pytest.mark.parametrize("name", NOT_NAMES)
def test_names_refuse_control_and_invisible_characters(client: TestClient, name: str) -> None:
    agent = new_agent(client)
    attempts = [
        client.post("/agents", json={"name": name}),
        client.patch(f"/agents/{agent}", json={"name": name}),
        client.post("/agents", json={"name": "Meta", "metadata": {name: "x"}}),
        client.post("/conversations", json={"agent_id": agent, "title": name}),
        client.post(f"/agents/{agent}/memory/blocks", json={"name": name}),
    ]
    for refused in attempts:
        assert refused.status_code == 422, refused.text
        assert refused.json()["code"] == "validation_error"
    assert [a["name"] for a in client.get("/agents").json()] == ["Kit"]


def test_ordinary_names_pass(client: TestClient) -> None:
    name = "Zo\u00eb's helper \u2013 \u65e5\u672c"  # accents, a dash, CJK: all visible
    created = client.post("/agents", json={"name": name, "metadata": {"team": "a"}})
    assert created.status_code == 201
    agent = created.json()["id"]
    titled = client.post("/conversations", json={"agent_id": agent, "title": "Plans for Zoë"})
    assert titled.status_code == 201
    untitled = client.post("/conversations", json={"agent_id": agent})
    assert untitled.status_code == 201  # no title at all is fine


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/agents", {"name": "Strict", "recent_turns": False}),
        ("/agents", {"name": "Strict", "event_expiry_days": True}),
        ("/agents", {"name": "Strict", "recent_turns": "5"}),
    ],
)
def test_numbers_are_numbers(client: TestClient, path: str, body: dict[str, object]) -> None:
    refused = client.post(path, json=body)
    assert refused.status_code == 422


def test_block_numbers_are_numbers(client: TestClient) -> None:
    agent = new_agent(client)
    base = f"/agents/{agent}/memory/blocks"
    assert client.post(base, json={"name": "n", "word_limit": True}).status_code == 422
    assert client.patch(f"{base}/human", json={"word_limit": False}).status_code == 422
    assert client.patch(f"{base}/human", json={"word_limit": 50}).status_code == 200
