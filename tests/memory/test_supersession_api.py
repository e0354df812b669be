"""Facts that stay current, over HTTP: a write that replaces older memories (named, or
stating the same fact) says so; search answers now, then, or with history; the supersede
route; and refusals that leave everything stored as it was."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.main import create_app

DAY = 86_400.0


@pytest.fixture
def client(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    settings = Settings(
        sqlite_path=tmp_path / "m.db", encryption_key="k" * 40, memory_embedding_backend="static"
    )
    with TestClient(create_app(settings, clock=clock), base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def base(client: TestClient) -> str:
    created = client.post("/agents", json={"name": "Keeper"})
    return f"/agents/{created.json()['id']}/memory/archival"


def _write(client: TestClient, base: str, clock: FrozenClock, **body: Any) -> dict[str, Any]:
    clock.advance(30 * DAY)
    written = client.post(base, json=body)
    assert written.status_code == 201, written.text
    reply: dict[str, Any] = written.json()
    return reply


def _found(client: TestClient, base: str, query: str, **params: Any) -> list[str]:
    found = client.get(f"{base}/search", params={"query": query, **params})
    assert found.status_code == 200, found.text
    return [m["content"] for m in found.json()["memories"]]


def test_a_changed_fact_replaces_the_old_one_and_says_so(
    client: TestClient, base: str, clock: FrozenClock
) -> None:
    lisbon = _write(client, base, clock, content="Lives in: Lisbon")
    assert lisbon["valid_from"] == lisbon["created_at"]
    assert lisbon["superseded_at"] is None
    assert lisbon["replaced"] == []
    porto = _write(client, base, clock, content="Lives in: Porto")
    assert [m["id"] for m in porto["replaced"]] == [lisbon["id"]]
    day = lisbon["created_at"][:10]
    assert porto["notes"] == [f"Replaced: 'Lives in: Lisbon' ({day}) → 'Lives in: Porto'"]
    old = client.get(f"{base}/{lisbon['id']}").json()
    assert old["superseded_by"] == porto["id"]
    assert old["superseded_at"] == porto["valid_from"]

    for mode in ("hybrid", "lexical", "semantic"):
        assert _found(client, base, "where do I live", mode=mode) == ["Lives in: Porto"]
        assert _found(client, base, "where did I live before?", mode=mode)[0] == (
            "Lives in: Lisbon"
        )
        history = _found(client, base, "where do I live", mode=mode, include_history="true")
        assert sorted(history) == ["Lives in: Lisbon", "Lives in: Porto"]
    assert _found(client, base, "where do I live", as_of=day) == ["Lives in: Lisbon"]
    assert _found(client, base, "where do I live", as_of="2001-01-01") == []
    # Listing shows every memory, with its validity.
    listed = {m["content"]: m for m in client.get(base).json()["memories"]}
    assert listed["Lives in: Lisbon"]["superseded_by"] == porto["id"]


def test_named_replacements_a_given_date_and_the_agents_setting(
    client: TestClient, base: str, clock: FrozenClock
) -> None:
    spot = _write(client, base, clock, content="Parking spot B12")
    moved = _write(
        client,
        base,
        clock,
        content="Parking spot moved to C3",
        supersedes=[spot["id"]],
        valid_from="2020-05-01",
    )
    assert moved["valid_from"].startswith("2020-05-01T00:00:00")  # a date: from its start
    noon = client.get(f"{base}/search", params={"query": "parking", "as_of": "2020-05-01T12:00"})
    assert [m["id"] for m in noon.json()["memories"]] == [moved["id"]]
    assert [m["id"] for m in moved["replaced"]] == [spot["id"]]
    # Its start is before the old one's: the old one ends when it began, not before.
    assert moved["replaced"][0]["superseded_at"] == spot["valid_from"]
    again = _write(client, base, clock, content="Parking spot D4", supersedes=[spot["id"]])
    assert again["replaced"] == []
    assert [m["superseded_by"] for m in again["not_replaced"]] == [moved["id"]]
    assert again["notes"][0].startswith("Not replaced: 'Parking spot B12' was already replaced")

    agent = base.removesuffix("/memory/archival")
    assert client.patch(agent, json={"auto_supersede": False}).json()["auto_supersede"] is False
    _write(client, base, clock, content="Phone: 555 0100")
    kept = _write(client, base, clock, content="Phone: 555 0199")
    assert kept["replaced"] == []
    assert sorted(_found(client, base, "phone", mode="lexical")) == [
        "Phone: 555 0100",
        "Phone: 555 0199",
    ]


def test_the_supersede_route(client: TestClient, base: str, clock: FrozenClock) -> None:
    old = _write(client, base, clock, content="Desk on the 4th floor")
    new = _write(client, base, clock, content="Desk on the 2nd floor")
    newer = _write(client, base, clock, content="Desk on the 3rd floor")
    ended = client.post(f"{base}/{old['id']}/supersede", json={"by": new["id"]})
    assert ended.status_code == 200, ended.text
    assert ended.json()["superseded_by"] == new["id"]
    assert ended.json()["superseded_at"] == new["valid_from"]

    again = client.post(f"{base}/{old['id']}/supersede", json={"by": newer["id"]})
    assert again.status_code == 409
    assert again.json()["code"] == "already_superseded"
    assert new["id"] in again.json()["message"]
    itself = client.post(f"{base}/{new['id']}/supersede", json={"by": new["id"]})
    assert (itself.status_code, itself.json()["code"]) == (409, "invalid_supersession")
    stale = client.post(f"{base}/{newer['id']}/supersede", json={"by": old["id"]})
    assert (stale.status_code, stale.json()["code"]) == (409, "invalid_supersession")
    unknown = client.post(f"{base}/{'0' * 32}/supersede", json={"by": new["id"]})
    assert (unknown.status_code, unknown.json()["code"]) == (404, "archival_memory_not_found")
    no_by = client.post(f"{base}/{new['id']}/supersede", json={})
    assert no_by.status_code == 422
    # Nothing changed by the refusals.
    assert client.get(f"{base}/{newer['id']}").json()["superseded_by"] is None
    assert client.get(f"{base}/{new['id']}").json()["superseded_by"] is None


def test_another_agents_memory_is_unknown(
    client: TestClient, base: str, clock: FrozenClock
) -> None:
    theirs = _write(client, base, clock, content="Lives in: Lisbon")
    mine = client.post("/agents", json={"name": "Other"}).json()["id"]
    other = f"/agents/{mine}/memory/archival"
    refused = client.post(other, json={"content": "Lives in: Porto", "supersedes": [theirs["id"]]})
    assert (refused.status_code, refused.json()["code"]) == (404, "archival_memory_not_found")
    assert client.get(other).json()["memories"] == []  # nothing written
    own = _write(client, other, clock, content="Lives in: Braga")
    assert own["replaced"] == []  # another agent's facts are not this one's
    crossed = client.post(f"{other}/{theirs['id']}/supersede", json={"by": own["id"]})
    assert crossed.status_code == 404
    assert client.get(f"{base}/{theirs['id']}").json()["superseded_by"] is None


def test_bad_dates_are_refused(client: TestClient, base: str) -> None:
    bad = client.post(base, json={"content": "x", "valid_from": "last tuesday"})
    assert bad.status_code == 422
    search = client.get(f"{base}/search", params={"query": "x", "as_of": "soon"})
    assert search.status_code == 422
    too_many = client.post(base, json={"content": "x", "supersedes": ["a"] * 21})
    assert too_many.status_code == 422
    assert client.get(base).json()["memories"] == []
