"""A JSON body holding text that is not Unicode (a lone surrogate, which JSON can spell)
is a validation error on every route, in each surface's own error shape: never a 500."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.http.unicode_body import lone_surrogate
from api.main import create_app

LOCAL = "http://127.0.0.1"
LONE = '"\\ud800"'  # as JSON spells it: Python reads it into a str no encoder takes


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        store="sqlite", sqlite_path=tmp_path / "app.db", memory_embedding_backend="none"
    )
    with TestClient(create_app(settings), base_url=LOCAL, raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def agent_id(client: TestClient) -> str:
    created = client.post("/agents", json={"name": "Sam"})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def post(client: TestClient, path: str, body: str) -> tuple[int, dict[str, object]]:
    response = client.post(
        path, content=body.encode(), headers={"content-type": "application/json"}
    )
    return response.status_code, response.json()


@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        ("/messages", '{"agent_name": "Sam", "role": "user", "content": @@}', "body.content"),
        ("/messages", '{"agent_name": @@, "role": "user", "content": "hi"}', "body.agent_name"),
        (
            "/messages/batch",
            '{"agent_name": "Sam", "messages": [{"role": "user", "content": @@}]}',
            "body.messages.0.content",
        ),
        ("/messages/search", '{"agent_name": @@, "query": "hi"}', "body.agent_name"),
        ("/memory-blocks", '{"agent_name": @@, "label": "x", "value": "y"}', "body.agent_name"),
        ("/chat", '{"agent_id": "AGENT", "prompt": @@}', "body.prompt"),
        ("/agents/AGENT/memory/archival", '{"content": @@}', "body.content"),
    ],
)
def test_a_lone_surrogate_is_refused_where_it_is(
    client: TestClient, agent_id: str, path: str, body: str, where: str
) -> None:
    status, answer = post(
        client, path.replace("AGENT", agent_id), body.replace("AGENT", agent_id).replace("@@", LONE)
    )
    assert status == 422
    assert answer["code"] == "validation_error"
    assert f"{where}: Text must be valid Unicode" in str(answer["message"])


def test_seed_004s_memory_add_refuses_it_in_its_own_shape(client: TestClient) -> None:
    body = '{"user_id": "u1", "messages": [{"role": "user", "content": @@}]}'.replace("@@", LONE)
    status, answer = post(client, "/memory/add", body)
    assert status == 422
    assert answer["success"] is False
    assert "body.messages.0.content" in str(answer["message"])


def test_the_openai_surface_refuses_it_in_openais_shape(client: TestClient, agent_id: str) -> None:
    body = '{"model": "Sam", "messages": [{"role": "user", "content": @@}]}'.replace("@@", LONE)
    status, answer = post(client, "/v1/chat/completions", body)
    assert status == 400
    error = answer["error"]
    assert isinstance(error, dict)
    assert "lone surrogate" in str(error["message"])


def test_an_escaped_emoji_is_text_and_is_stored(client: TestClient, agent_id: str) -> None:
    # A surrogate pair, as json.dumps sends an emoji by default: Unicode text.
    body = json.dumps({"agent_name": "Sam", "role": "user", "content": "coffee \U0001f600"})
    assert "\\ud83d\\ude00" in body
    status, answer = post(client, "/messages", body)
    assert status in (200, 201), answer


def test_the_place_is_found_in_keys_and_nested_values() -> None:
    assert lone_surrogate({"a": [{"b": "ok"}, {"c": "\ud800"}]}) == ("a", 1, "c")
    assert lone_surrogate({"meta": {"\udfff": 1}}) == ("meta", "\\udfff")
    assert lone_surrogate({"a": "\U0001f600", "b": [1, None, True]}) is None
