"""/memory-blocks as seed 002 documents them: the agent's own core-memory blocks, a block's
`value` being its lines joined by newlines, written on the version read."""

from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.kit.clock import FrozenClock
from tests.memory_server.conftest import new_agent, refused

SEED_FIELDS = {"id", "agent_id", "label", "value", "created_at", "updated_at"}


def create(client: TestClient, label: str, value: str, agent: str = "my_agent") -> Any:
    return client.post("/memory-blocks", json={"agent_name": agent, "label": label, "value": value})


def test_create_read_list_and_replace(api: TestClient, clock: FrozenClock) -> None:
    agent = new_agent(api)
    created = create(api, "project", "Name: Apollo\nDue: May")
    assert created.status_code == 201, created.text
    block = created.json()
    assert set(block) >= SEED_FIELDS
    assert (block["agent_id"], block["label"], block["value"]) == (
        agent["id"],
        "project",
        "Name: Apollo\nDue: May",
    )
    assert block["created_at"] == block["updated_at"]
    assert created.headers["ETag"] == f'"{block["version"]}"'

    read = api.get("/memory-blocks/my_agent/project")
    assert read.status_code == 200
    assert read.json() == block
    assert read.headers["ETag"] == created.headers["ETag"]

    listed = api.get("/memory-blocks/my_agent").json()
    assert [b["label"] for b in listed] == ["human", "persona", "project"]  # ours first
    assert listed[2] == block

    clock.advance(60)
    replaced = api.put("/memory-blocks/my_agent/project", json={"value": "Name: Apollo\nDue: June"})
    assert replaced.status_code == 200, replaced.text
    after = replaced.json()
    assert after["value"] == "Name: Apollo\nDue: June"
    assert after["id"] == block["id"]
    assert after["created_at"] == block["created_at"]
    assert after["updated_at"] > block["updated_at"]
    assert after["version"] == block["version"] + 1
    assert replaced.headers["ETag"] == f'"{after["version"]}"'

    # The agent's own view of its memory is the same block.
    lines = api.get(f"/agents/{agent['id']}/memory/blocks/project").json()["lines"]
    assert lines == ["Name: Apollo", "Due: June"]


def test_an_existing_label_is_409(api: TestClient) -> None:
    new_agent(api, persona="I am brief.")
    assert create(api, "project", "x").status_code == 201
    refused(create(api, "project", "y"), 409, "block_exists")
    refused(create(api, "Project", "y"), 409, "block_exists")  # labels compare as names do
    refused(create(api, "persona", "z"), 409, "block_exists")  # it holds the persona
    assert api.get("/memory-blocks/my_agent/project").json()["value"] == "x"


def test_the_empty_default_blocks_can_be_created(api: TestClient) -> None:
    """Every agent starts with empty `human` and `persona` blocks; a seed-002 client, which
    knows nothing of them, creates them as it would on the seed's server."""
    new_agent(api)
    created = create(api, "human", "Name: Alice\nLocation: Boston")
    assert created.status_code == 201, created.text
    assert created.json()["value"] == "Name: Alice\nLocation: Boston"
    refused(create(api, "human", "Name: Bob"), 409, "block_exists")
    # A block emptied later counts as absent again; an empty value creates it empty.
    api.put("/memory-blocks/my_agent/human", json={"value": ""})
    assert create(api, "human", "Name: Carol").status_code == 201
    assert create(api, "persona", "").status_code == 201


def test_values_are_lines(api: TestClient) -> None:
    new_agent(api)
    block = create(api, "notes", "  first   line \n\nsecond\nfirst line\n").json()
    # One fact per line: blank and repeated lines go, spaces are single.
    assert block["value"] == "first line\nsecond"
    put = api.put("/memory-blocks/my_agent/notes", json={"value": "a\r\nb\n\n\nc"})
    assert put.json()["value"] == "a\nb\nc"


def test_missing_things_are_404(api: TestClient) -> None:
    new_agent(api)
    refused(api.get("/memory-blocks/my_agent/nothing"), 404, "block_not_found")
    refused(api.put("/memory-blocks/my_agent/nothing", json={"value": "x"}), 404, "block_not_found")
    refused(api.get("/memory-blocks/nobody"), 404, "agent_not_found")
    refused(api.get("/memory-blocks/nobody/human"), 404, "agent_not_found")
    refused(api.put("/memory-blocks/nobody/human", json={"value": "x"}), 404, "agent_not_found")
    refused(create(api, "notes", "x", agent="nobody"), 404, "agent_not_found")


def test_if_match_writes_only_on_the_version_read(api: TestClient) -> None:
    new_agent(api)
    version = create(api, "notes", "one").json()["version"]
    url = "/memory-blocks/my_agent/notes"
    ok = api.put(url, json={"value": "two"}, headers={"If-Match": f'"{version}"'})
    assert ok.status_code == 200, ok.text
    stale = api.put(url, json={"value": "three"}, headers={"If-Match": f'"{version}"'})
    refused(stale, 412, "version_mismatch")
    assert stale.headers["ETag"] == f'"{version + 1}"'
    assert api.get(url).json()["value"] == "two"
    refused(
        api.put(url, json={"value": "x"}, headers={"If-Match": "soon"}), 400, "invalid_if_match"
    )
    assert api.put(url, json={"value": "four"}, headers={"If-Match": "*"}).status_code == 200


def test_blocks_keep_their_limits(api: TestClient) -> None:
    new_agent(api)
    too_long = "word " * 500  # one line of 2,500 characters
    refused(create(api, "notes", too_long), 400, "content_too_long")
    too_many = "\n".join(f"fact {i} " + "word " * 9 for i in range(501))  # 5,010 words
    refused(create(api, "notes", too_many), 409, "block_full")
    assert create(api, "notes", "fits").status_code == 201
    refused(api.put("/memory-blocks/my_agent/notes", json={"value": too_many}), 409, "block_full")
    refused(create(api, "!!!", "x"), 400, "invalid_block_name")
    refused(api.get("/memory-blocks/my_agent/!!!"), 400, "invalid_block_name")


@pytest.mark.parametrize(
    "body",
    [
        {"agent_name": "my_agent", "label": "notes"},
        {"agent_name": "my_agent", "value": "x"},
        {"label": "notes", "value": "x"},
        {"agent_name": "my_agent", "label": "notes", "value": 5},
        {"agent_name": "my_agent", "label": "", "value": "x"},
        {"agent_name": "my_agent", "label": "no\ttabs", "value": "x"},
        {"agent_name": "my_agent", "label": "notes", "value": "x", "description": "y"},
    ],
)
def test_bad_block_bodies_are_422(api: TestClient, body: dict[str, Any]) -> None:
    new_agent(api)
    refused(api.post("/memory-blocks", json=body), 422, "validation_error")
    assert "notes" not in [b["label"] for b in api.get("/memory-blocks/my_agent").json()]


@pytest.mark.parametrize("body", [{}, {"value": None}, {"value": ["a"]}, {"value": "x", "y": 1}])
def test_bad_replacements_are_422(api: TestClient, body: dict[str, Any]) -> None:
    new_agent(api)
    create(api, "notes", "kept")
    refused(api.put("/memory-blocks/my_agent/notes", json=body), 422, "validation_error")
    assert api.get("/memory-blocks/my_agent/notes").json()["value"] == "kept"
