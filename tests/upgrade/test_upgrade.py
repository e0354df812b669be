"""Upgrades keep data: a store written by the first release with a version (layout 1,
`fixtures/layout-1.db`, made by make_fixture.py) is served whole by this code after its
start-up; a table of an older layout is migrated forward and stamped once, across replicas;
one of a newer layout is refused with a clear message."""

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app
from api.maintenance import layout
from api.repositories import Repositories
from api.store import schema
from api.store.definition import load_definition
from api.store.keys import schema_version
from api.store.sqlite import SqliteTable
from tests.upgrade.make_fixture import FIXTURE, TABLE

LOCAL = "http://127.0.0.1"


def settings_on(path: Path) -> Settings:
    return Settings(store="sqlite", sqlite_path=path, dynamodb_table=TABLE, encryption_key="k" * 40)


@pytest.fixture
def released(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    shutil.copyfile(FIXTURE, path)
    return path


@pytest.fixture
def served(released: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_on(released)), base_url=LOCAL) as client:
        yield client


def table_at(path: Path) -> SqliteTable:
    return SqliteTable(path, TABLE, load_definition())


async def version_of(path: Path) -> int:
    table = table_at(path)
    try:
        return await schema.stored_version(table)
    finally:
        await table.close()


def test_the_first_releases_store_is_served_whole(served: TestClient, released: Path) -> None:
    agents = {a["name"]: a for a in served.get("/agents").json()}
    assert set(agents) == {"Ada", "Memory: ada-1"}  # seed 004's user has an agent of its own
    agent_id = agents["Ada"]["id"]
    blocks = {b["name"]: b for b in served.get(f"/agents/{agent_id}/memory/blocks").json()}
    assert "Name: Ada" in blocks["human"]["lines"]
    assert blocks["projects"]["lines"] == ["Analytical engine notes"]
    archival = served.get(f"/agents/{agent_id}/memory/archival").json()
    assert len(archival["memories"]) == 3
    found = served.get(
        f"/agents/{agent_id}/memory/archival/search", params={"query": "what food do I like?"}
    ).json()
    assert "mozzarella" in found["memories"][0]["content"]
    listed = served.get("/conversations", params={"agent_id": agent_id}).json()
    said = {
        c["id"]: served.get(f"/conversations/{c['id']}/messages").json()["messages"]
        for c in listed["conversations"]
    }
    (conversation_id,) = [c for c, m in said.items() if m and m[0]["content"] == "My name is Ada"]
    # The offline model noted the name with a tool, then answered.
    assert [m["role"] for m in said[conversation_id]] == ["user", "assistant", "tool", "assistant"]
    assert any(m[0]["content"] == "I work on engines." for m in said.values() if m)
    # The conversation goes on, with what it held.
    turn = served.post(
        f"/conversations/{conversation_id}/messages",
        json={"content": "What is my name?", "stream": False},
    )
    assert turn.status_code == 200, turn.text
    assert "Ada" in turn.json()["output"]
    # Seed 004's user, and what its memory run wrote.
    context = served.get("/memory/context", params={"user_id": "ada-1", "query": "drinks"})
    assert context.status_code == 200, context.text
    assert "tea" in context.text
    assert asyncio.run(version_of(released)) == schema.SCHEMA_VERSION


def test_a_table_of_an_older_layout_is_migrated_once_across_replicas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store.db"
    shutil.copyfile(FIXTURE, path)
    migrated: list[str] = []

    def step(name: str) -> schema.Step:
        async def run() -> None:
            migrated.append(name)

        return run

    # A release whose layout 3 needs a step from layout 1 and one from layout 2.
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(layout, "steps", lambda repos: {1: step("1 to 2"), 2: step("2 to 3")})

    async def two_replicas() -> list[int]:
        a, b = table_at(path), table_at(path)
        try:
            return list(
                await asyncio.gather(
                    schema.ensure_current(a, "next", layout.steps(Repositories.over(a))),
                    schema.ensure_current(b, "next", layout.steps(Repositories.over(b))),
                )
            )
        finally:
            await asyncio.gather(a.close(), b.close())

    found = asyncio.run(two_replicas())
    # Each found the table from before the version item, unless the other had stamped it
    # by the time it looked; each that found it old ran the steps (from 0 to 1 nothing,
    # then each in order), and one stamp stands.
    assert 0 in found, found
    assert set(found) <= {0, 3}, found
    assert migrated == ["1 to 2", "2 to 3"] * found.count(0)
    assert asyncio.run(version_of(path)) == 3
    migrated.clear()
    with TestClient(create_app(settings_on(path)), base_url=LOCAL) as client:
        assert "Ada" in [a["name"] for a in client.get("/agents").json()]
    assert migrated == []  # stamped: not migrated again


def test_a_table_of_a_newer_layout_is_refused_with_a_clear_message(released: Path) -> None:
    async def stamp_newer() -> None:
        table = table_at(released)
        item = {**schema_version().as_item(), "entity": "SchemaVersion", "version": 99}
        await table.put(item)
        await table.close()

    asyncio.run(stamp_newer())
    with (
        pytest.raises(schema.NewerSchema, match="layout 99, written by a newer release"),
        TestClient(create_app(settings_on(released)), base_url=LOCAL),
    ):
        pass
    assert asyncio.run(version_of(released)) == 99  # left as it was
