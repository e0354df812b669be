"""History and undo over HTTP, in both auth modes (local, and google with an API key): a
block's version restored with If-Match, every refusal with its status and code; an
archival memory deleted (`Undo-Until`), restored within its window, gone after it; and two
servers on one store (a SQLite file, a DynamoDB Local table) agreeing at every step."""

import uuid
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.auth.conftest import google
from tests.memory_server.conftest import MODES, refused, serve
from tests.runtime.conftest import Store, running

__all__ = ["google"]


@pytest.fixture(params=MODES)
def api(request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    yield from serve(request.param, request, tmp_path, clock, archival_undo_seconds=120)


def new_agent(client: TestClient) -> str:
    created = client.post("/agents", json={"name": "Keeper"})
    assert created.status_code == 201, created.text
    agent_id: str = created.json()["id"]
    return agent_id


def test_a_block_version_is_restored_with_if_match(api: TestClient) -> None:
    base = f"/agents/{new_agent(api)}/memory/blocks/human"
    for line in ("Name: Alice", "Likes: tea"):
        assert api.post(f"{base}/lines", json={"content": line}).status_code == 201
    assert api.put(f"{base}/lines/1", json={"content": "Name: Bob"}).status_code == 200
    now = api.get(base)
    assert now.headers["ETag"] == '"4"'

    restored = api.post(f"{base}/restore", json={"version": 2}, headers={"If-Match": '"4"'})
    assert restored.status_code == 200, restored.text
    assert restored.json()["lines"] == ["Name: Alice"]
    assert restored.headers["ETag"] == '"5"'
    newest = api.get(f"{base}/history", params={"limit": 1}).json()["changes"][0]
    assert newest["version"] == 5
    assert (newest["source"], newest["action"], newest["restored_from"]) == (
        "rest",
        "rewrite",
        2,
    )
    assert (newest["removed"], newest["added"]) == (["Name: Bob", "Likes: tea"], ["Name: Alice"])

    stale = api.post(f"{base}/restore", json={"version": 3}, headers={"If-Match": '"4"'})
    refused(stale, 412, "version_mismatch")
    assert stale.headers["ETag"] == '"5"'
    refused(api.post(f"{base}/restore", json={"version": 9}), 404, "version_not_found")
    unknown_block = api.post(base.replace("human", "nope") + "/restore", json={"version": 1})
    refused(unknown_block, 404, "block_not_found")
    assert api.post(f"{base}/restore", json={"version": 0}).status_code == 422
    assert api.get(base).json()["lines"] == ["Name: Alice"]


def test_a_restore_that_would_overfill_the_block_is_refused(api: TestClient) -> None:
    base = f"/agents/{new_agent(api)}/memory/blocks"
    made = api.post(base, json={"name": "notes", "word_limit": 3, "content": "one two three"})
    assert made.status_code == 201, made.text
    assert api.patch(f"{base}/notes", json={"lines": ["one"]}).status_code == 200
    assert api.patch(f"{base}/notes", json={"word_limit": 2}).status_code == 200
    refused(api.post(f"{base}/notes/restore", json={"version": 1}), 409, "block_full")


def test_a_deleted_memory_is_undone_within_its_window_and_gone_after_it(
    api: TestClient, clock: FrozenClock
) -> None:
    base = f"/agents/{new_agent(api)}/memory/archival"
    created = api.post(
        base, json={"content": "Dana's flight is on May 3", "category": "fact", "tags": ["user"]}
    )
    assert created.status_code == 201, created.text
    url = f"{base}/{created.json()['id']}"
    memory = api.get(url).json()

    deleted = api.delete(url)
    assert deleted.status_code == 204
    assert deleted.content == b""
    until = parsedate_to_datetime(deleted.headers["Undo-Until"])
    assert until.timestamp() == pytest.approx(clock.now() + 120, abs=1)
    refused(api.get(url), 404, "archival_memory_not_found")
    assert api.get(base).json()["memories"] == []
    assert api.get(f"{base}/search", params={"query": "flight"}).json()["memories"] == []
    refused(api.delete(url), 404, "archival_memory_not_found")

    clock.advance(60)
    restored = api.post(f"{url}/restore")
    assert restored.status_code == 200, restored.text
    assert restored.json() == memory
    assert api.get(url).json() == memory
    hits = api.get(f"{base}/search", params={"query": "flight"}).json()["memories"]
    assert [h["id"] for h in hits] == [memory["id"]]
    assert api.post(f"{url}/restore").json() == memory  # a retry is safe

    assert api.delete(url).status_code == 204
    clock.advance(121)
    refused(api.post(f"{url}/restore"), 404, "restore_window_passed")
    # A memory never deleted, and a string that is no memory id at all (never a key).
    for unknown in ("0123456789abcdef0123456789abcdef", "x" * 2000):
        refused(api.post(f"{base}/{unknown}/restore"), 404, "restore_window_passed")


def test_a_restore_after_the_text_was_stored_again_is_refused(api: TestClient) -> None:
    base = f"/agents/{new_agent(api)}/memory/archival"
    first = api.post(base, json={"content": "Eve takes the 8:10 train"}).json()
    assert api.delete(f"{base}/{first['id']}").status_code == 204
    again = api.post(base, json={"content": "Eve takes the 8:10 train"})
    assert again.status_code == 201
    answer = api.post(f"{base}/{first['id']}/restore")
    refused(answer, 409, "archival_text_stored_again")
    assert answer.json()["details"]["existing_memory_id"] == again.json()["id"]


@pytest.fixture(params=["sqlite", "dynamodb_local"])
def shared(request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock) -> Store:
    endpoint = None
    if request.param == "dynamodb_local":
        endpoint = request.getfixturevalue("dynamodb_local").endpoint
    return Store(
        request.param, tmp_path / "shared.db", f"undo-{uuid.uuid4().hex[:12]}", endpoint, clock
    )


@pytest.fixture
def replicas(
    shared: Store, tmp_path: Path, clock: FrozenClock
) -> Iterator[tuple[TestClient, TestClient]]:
    settings = Settings(sqlite_path=tmp_path / "app.db", encryption_key="k" * 40)
    with (
        running(settings, clock, shared.open()) as a,
        running(settings, clock, shared.open()) as b,
    ):
        yield a, b


def search(client: TestClient, base: str, query: str) -> list[Any]:
    found = client.get(f"{base}/search", params={"query": query})
    assert found.status_code == 200, found.text
    return [m["id"] for m in found.json()["memories"]]


def test_two_servers_agree_on_a_delete_its_undo_and_its_expiry(
    replicas: tuple[TestClient, TestClient], clock: FrozenClock
) -> None:
    a, b = replicas
    base = f"/agents/{new_agent(a)}/memory/archival"
    made = a.post(base, json={"content": "Frank's bike is the red one"}).json()
    memory = a.get(f"{base}/{made['id']}").json()
    assert search(b, base, "bike") == [memory["id"]]

    assert a.delete(f"{base}/{memory['id']}").status_code == 204
    assert search(b, base, "bike") == []
    assert b.post(f"{base}/{memory['id']}/restore").json() == memory
    assert search(a, base, "bike") == [memory["id"]]
    assert search(b, base, "bike") == [memory["id"]]

    assert b.delete(f"{base}/{memory['id']}").status_code == 204
    clock.advance(601)  # the default window, ten minutes, has passed
    refused(a.post(f"{base}/{memory['id']}/restore"), 404, "restore_window_passed")
    assert search(a, base, "bike") == []
    assert search(b, base, "bike") == []
