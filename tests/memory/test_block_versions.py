"""Block versions: every write moves a block's version on; a write made on a version that
is no longer current is refused (If-Match, 412) instead of erasing what another wrote;
lines can be added, replaced and removed without reading the block first."""

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.memory import service as memory_service
from api.memory.errors import VersionMismatch
from api.repositories import Repositories
from api.store.table import Table
from tests.contract.conftest import skip_on_moto
from tests.runtime.conftest import new_agent, running

AGENT = "agent-1"


async def test_twenty_read_modify_writes_with_versions_lose_nothing(
    table: Table, engine: str
) -> None:
    """Seen from outside: 20 clients reading, adding a line and writing back lost 19 lines.
    With the version read sent back, a writer that lost the race reads again."""
    repos = Repositories.over(table)
    skip_on_moto(engine, "its in-process tables are not thread-safe; transactions race")
    await memory_service.ensure_default_blocks(repos, AGENT)

    async def add(line: str) -> int:
        refusals = 0
        while True:
            block = await memory_service.read_block(repos, AGENT, "human")
            try:
                await memory_service.write_lines(
                    repos, AGENT, "human", [*block.lines, line], expected=block.version
                )
                return refusals
            except VersionMismatch:
                refusals += 1

    lines = [f"Fact {i}" for i in range(20)]
    refusals = await asyncio.gather(*(add(line) for line in lines))
    block = await memory_service.read_block(repos, AGENT, "human")
    assert sorted(block.lines) == sorted(lines)
    assert block.version == 1 + len(lines)
    assert sum(refusals) > 0  # they did race, and were told so


async def test_a_stale_write_changes_nothing(table: Table) -> None:
    repos = Repositories.over(table)
    await memory_service.ensure_default_blocks(repos, AGENT)
    seen = await memory_service.read_block(repos, AGENT, "human")
    await memory_service.append_line(repos, AGENT, "human", "Name: Alice")  # the agent
    with pytest.raises(VersionMismatch) as refused:
        await memory_service.update_block(
            repos, AGENT, "human", description="Edited", lines=["Name: Bob"], expected=seen.version
        )
    assert refused.value.current == seen.version + 1
    after = await memory_service.read_block(repos, AGENT, "human")
    assert after.lines == ("Name: Alice",)
    assert after.description != "Edited"


@pytest.fixture
def client(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    settings = Settings(sqlite_path=tmp_path / "v.db", encryption_key="k" * 40)
    with running(settings, clock) as client:
        yield client


def test_blocks_carry_their_version_as_etag_and_honour_if_match(client: TestClient) -> None:
    agent = new_agent(client)
    url = f"/agents/{agent}/memory/blocks/human"
    read = client.get(url)
    assert read.headers["ETag"] == '"1"'
    assert read.json()["version"] == 1

    edited = client.patch(url, json={"lines": ["Name: Alice"]}, headers={"If-Match": '"1"'})
    assert edited.status_code == 200, edited.text
    assert (edited.headers["ETag"], edited.json()["version"]) == ('"2"', 2)

    stale = client.patch(url, json={"lines": ["Name: Bob"]}, headers={"If-Match": '"1"'})
    assert stale.status_code == 412
    assert stale.headers["ETag"] == '"2"'
    assert stale.json()["code"] == "version_mismatch"
    assert stale.json()["details"]["current_version"] == 2
    assert client.get(url).json()["lines"] == ["Name: Alice"]

    described = client.patch(url, json={"description": "Who I am"}, headers={"If-Match": "*"})
    assert described.json()["version"] == 3  # a description is a change too
    weak = client.patch(url, json={"word_limit": 100}, headers={"If-Match": 'W/"3"'})
    assert weak.status_code == 200
    refused = client.patch(url, json={"word_limit": 90}, headers={"If-Match": "yesterday"})
    assert refused.status_code == 400  # not an entity-tag at all
    assert refused.json()["code"] == "invalid_if_match"
    # An entity-tag, well-formed, that no version of the block is: a failed precondition.
    for other in ('"definitely-not-the-version"', 'W/"x"', '""'):
        unmatched = client.patch(url, json={"word_limit": 90}, headers={"If-Match": other})
        assert unmatched.status_code == 412, other
        assert unmatched.json()["code"] == "version_mismatch"
        assert unmatched.json()["details"]["current_version"] == 4
    too_small = client.patch(url, json={"lines": ["one two three"], "word_limit": 2})
    assert too_small.status_code == 409
    assert too_small.json()["code"] == "block_full"
    assert client.get(url).json()["lines"] == ["Name: Alice"]


def test_lines_are_added_replaced_and_removed_without_a_read(client: TestClient) -> None:
    agent = new_agent(client)
    lines = f"/agents/{agent}/memory/blocks/human/lines"
    added = client.post(lines, json={"content": "Name: Alice"})
    assert added.status_code == 201
    assert (added.json()["line_number"], added.json()["changed"]) == (1, True)
    assert added.headers["ETag"] == '"2"'
    again = client.post(lines, json={"content": "Name: Alice"})
    assert again.status_code == 200
    assert again.json()["changed"] is False  # a retry adds nothing
    client.post(lines, json={"content": "Works at: Google"})

    replaced = client.put(f"{lines}/2", json={"content": "Works at: Lumo"})
    assert replaced.status_code == 200
    assert (replaced.json()["previous"], replaced.json()["block"]["lines"]) == (
        "Works at: Google",
        ["Name: Alice", "Works at: Lumo"],
    )
    version = replaced.json()["block"]["version"]
    stale = client.delete(f"{lines}/1", headers={"If-Match": f'"{version - 1}"'})
    assert stale.status_code == 412
    removed = client.delete(f"{lines}/1", headers={"If-Match": f'"{version}"'})
    assert removed.status_code == 200
    assert removed.json()["line"] == "Name: Alice"
    assert removed.json()["block"]["lines"] == ["Works at: Lumo"]

    assert client.put(f"{lines}/9", json={"content": "x"}).json()["code"] == "line_out_of_range"
    assert client.post(lines, json={"content": ""}).status_code == 422
    assert client.post(lines, json={"content": "   "}).json()["code"] == "empty_content"


def test_a_person_editing_never_erases_what_the_agent_appended(client: TestClient) -> None:
    agent = new_agent(client)
    url = f"/agents/{agent}/memory/blocks/human"
    seen = client.get(url)
    client.post(f"{url}/lines", json={"content": "Likes: tea"})  # the agent, meanwhile
    edit = client.patch(
        url, json={"lines": ["Name: Alice"]}, headers={"If-Match": seen.headers["ETag"]}
    )
    assert edit.status_code == 412
    assert client.get(url).json()["lines"] == ["Likes: tea"]


def test_a_block_is_deleted_only_at_the_version_read(client: TestClient) -> None:
    agent = new_agent(client)
    base = f"/agents/{agent}/memory/blocks"
    created = client.post(base, json={"name": "notes", "content": "first"})
    assert created.headers["ETag"] == '"1"'
    client.post(f"{base}/notes/lines", json={"content": "second"})
    assert client.delete(f"{base}/notes", headers={"If-Match": '"1"'}).status_code == 412
    assert client.get(f"{base}/notes").status_code == 200
    assert client.delete(f"{base}/notes", headers={"If-Match": '"2"'}).status_code == 204
    assert client.get(f"{base}/notes").status_code == 404
