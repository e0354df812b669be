"""A block's line history: every version of its lines is written with the change that made
it (what, when, through what), in one transaction; listed newest first over HTTP."""

import asyncio
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.memory import compaction
from api.memory import service as memory_service
from api.memory.errors import BlockNotFound, VersionMismatch
from api.memory.summarizer import TruncatingSummarizer
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store import keys
from api.store.rounds import WRITES, RoundCounter
from api.store.table import Table
from api.tools.native import ToolContext
from tests.contract.conftest import skip_on_moto
from tests.memory.helpers import call
from tests.runtime.conftest import new_agent, running

AGENT = "agent-1"


async def history(table: Table, block: str = "human") -> list[dict[str, Any]]:
    """The whole history, newest first, as the fields that say what happened."""
    repos = Repositories.over(table)
    changes, cursor = await memory_service.block_history(repos, AGENT, block, limit=100)
    assert cursor is None
    return [
        c.model_dump(include={"version", "source", "action", "line_number", "old_line"})
        | c.model_dump(include={"new_line", "removed", "added"})
        for c in changes
    ]


def entry(version: int, source: str, action: str, **fields: Any) -> dict[str, Any]:
    return {
        "version": version,
        "source": source,
        "action": action,
        "line_number": fields.get("line_number"),
        "old_line": fields.get("old_line"),
        "new_line": fields.get("new_line"),
        "removed": fields.get("removed", []),
        "added": fields.get("added", []),
    }


async def test_every_kind_of_edit_records_what_it_changed_and_through_what(
    table: Table, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    search = SearchEngine(repos.search, None, clock)
    await memory_service.ensure_default_blocks(repos, AGENT)
    chat = ToolContext(repos, search, AGENT, TruncatingSummarizer())
    run = ToolContext(repos, search, AGENT, TruncatingSummarizer(), source="memory_run")
    over_mcp = ToolContext(repos, search, AGENT, TruncatingSummarizer(), source="mcp")

    await call(chat, "core_memory_append", block="human", content="Name: Alice Moreira")
    clock.advance(1)
    replaced = await call(
        chat, "core_memory_replace", block="human", line_number=1, new_content="Name: Bob"
    )
    # The tool's reply keeps seed 000's format; the history keeps the replaced text.
    assert (
        replaced
        == 'Replaced line 1 in [human]: "Name: Alice Moreira" -> "Name: Bob" (2/5000 words)'
    )
    await call(run, "core_memory_append", block="human", content="Lives in: Lisbon")
    await call(over_mcp, "core_memory_append", block="human", content="Likes: tea")
    await memory_service.delete_line(repos, AGENT, "human", 3, source="rest")
    await memory_service.write_lines(
        repos, AGENT, "human", ["Name: Bob", "Lives in: Porto"], source="rest"
    )
    # What changes no line leaves no entry: a line already there, a line replaced by
    # itself, a new description.
    await call(chat, "core_memory_append", block="human", content="Name: Bob")
    await call(chat, "core_memory_replace", block="human", line_number=1, new_content="Name: Bob")
    await memory_service.update_block(repos, AGENT, "human", description="About the user")

    block = await memory_service.read_block(repos, AGENT, "human")
    assert block.lines == ("Name: Bob", "Lives in: Porto")
    assert block.version == 8  # the description moved it on too
    assert await history(table) == [
        entry(7, "rest", "rewrite", removed=["Lives in: Lisbon"], added=["Lives in: Porto"]),
        entry(6, "rest", "delete", line_number=3, old_line="Likes: tea"),
        entry(5, "mcp", "append", line_number=3, new_line="Likes: tea"),
        entry(4, "memory_run", "append", line_number=2, new_line="Lives in: Lisbon"),
        entry(
            3,
            "tool",
            "replace",
            line_number=1,
            old_line="Name: Alice Moreira",
            new_line="Name: Bob",
        ),
        entry(2, "tool", "append", line_number=1, new_line="Name: Alice Moreira"),
    ]
    changes, _ = await memory_service.block_history(repos, AGENT, "human", limit=10)
    started = datetime.fromtimestamp(clock.now() - 1, UTC)
    assert [c.at for c in changes][-2:] == [datetime.fromtimestamp(clock.now(), UTC), started]


async def test_a_version_and_its_change_are_one_transaction(table: Table) -> None:
    repos = Repositories.over(table)
    await memory_service.ensure_default_blocks(repos, AGENT)
    counter = RoundCounter(table)
    repos = Repositories.over(counter)
    for edit in (
        memory_service.append_line(repos, AGENT, "human", "Name: Alice"),
        memory_service.replace_line(repos, AGENT, "human", 1, "Name: Bob"),
        memory_service.update_block(repos, AGENT, "human", description="x", lines=["A: b"]),
        memory_service.delete_line(repos, AGENT, "human", 1),
    ):
        mark = counter.mark()
        await edit
        writes = [c for c in counter.since(mark) if c.operation in WRITES]
        assert [c.operation for c in writes] == ["transact_write"]
    assert [c["version"] for c in await history(table)] == [5, 4, 3, 2]


async def test_writers_that_lose_the_race_leave_no_entry_behind(table: Table, engine: str) -> None:
    repos = Repositories.over(table)
    skip_on_moto(engine, "its in-process tables are not thread-safe; transactions race")
    await memory_service.ensure_default_blocks(repos, AGENT)
    lines = [f"Fact {i}" for i in range(10)]
    await asyncio.gather(
        *(memory_service.append_line(repos, AGENT, "human", line, source="tool") for line in lines)
    )
    block = await memory_service.read_block(repos, AGENT, "human")
    found = list(reversed(await history(table)))
    # One entry per version, each the line that version added, where it added it.
    assert [c["version"] for c in found] == list(range(2, 12))
    assert [(c["line_number"], c["new_line"]) for c in found] == list(
        enumerate(block.lines, start=1)
    )
    # A write refused for its stale version writes no entry either.
    with pytest.raises(VersionMismatch):
        await memory_service.append_line(repos, AGENT, "human", "Late", expected=1)
    assert len(await history(table)) == 10


async def test_compaction_records_the_lines_it_moved_out(
    repos: Repositories, search: SearchEngine, clock: FrozenClock
) -> None:
    await memory_service.ensure_default_blocks(repos, AGENT)
    await memory_service.create_block(repos, AGENT, "notes", word_limit=20)
    lines = [f"Fact number {i} here" for i in range(1, 5)]  # 16 words of 20
    for line in lines:
        await memory_service.append_line(repos, AGENT, "notes", line, source="tool")
    done = await compaction.compact_block(repos, search, AGENT, "notes", TruncatingSummarizer())
    assert done.archived
    [latest, *_] = await history(repos.table, "notes")
    block = await memory_service.read_block(repos, AGENT, "notes")
    assert latest["version"] == block.version
    assert (latest["source"], latest["action"]) == ("compaction", "rewrite")
    assert latest["removed"] == list(done.archived)
    assert latest["added"] == [line for line in block.lines if line not in lines]


async def test_deleting_a_block_deletes_its_history_and_a_new_one_starts_afresh(
    store: Table, clock: FrozenClock
) -> None:
    repos = Repositories.over(store)
    await memory_service.ensure_default_blocks(repos, AGENT)
    await memory_service.create_block(repos, AGENT, "notes")
    for i in range(3):
        await memory_service.append_line(repos, AGENT, "notes", f"Old {i}")
    await memory_service.append_line(repos, AGENT, "human", "Name: Ada")
    await memory_service.delete_block(repos, AGENT, "notes")
    stored = (await store.query(keys.agent_partition(AGENT))).items
    kept = [i for i in stored if i["entity"] == keys.CORE_MEMORY_CHANGE]
    assert [(i["block_name"], i["new_line"]) for i in kept] == [("human", "Name: Ada")]
    with pytest.raises(BlockNotFound):
        await memory_service.block_history(repos, AGENT, "notes", limit=10)

    clock.advance(1)
    await memory_service.create_block(repos, AGENT, "notes")
    assert await history(store, "notes") == []
    await memory_service.append_line(repos, AGENT, "notes", "New")
    assert [c["new_line"] for c in await history(store, "notes")] == ["New"]


async def test_a_block_from_before_blocks_kept_times_keeps_a_history_too(store: Table) -> None:
    repos = Repositories.over(store)
    await memory_service.ensure_default_blocks(repos, AGENT)
    await memory_service.create_block(repos, AGENT, "notes")
    key = keys.memory_block_def(AGENT, "notes")
    item = await store.get(key)
    assert item is not None
    del item["created_at"]
    await store.put(item)
    await memory_service.append_line(repos, AGENT, "notes", "Kept")
    [change] = await history(store, "notes")
    assert change["new_line"] == "Kept"
    [stored], _ = await repos.memory.changes_page(AGENT, "notes", None, limit=5)
    assert stored.block_created_at is None


# --- over HTTP ---------------------------------------------------------------------------


@pytest.fixture
def client(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    settings = Settings(sqlite_path=tmp_path / "h.db", encryption_key="k" * 40)
    with running(settings, clock) as client:
        yield client


def test_the_history_route_pages_newest_first(client: TestClient, clock: FrozenClock) -> None:
    agent_id = new_agent(client)
    base = f"/agents/{agent_id}/memory/blocks/human"
    for name in ("Alice", "Bob", "Carol"):
        clock.advance(1)
        client.post(f"{base}/lines", json={"content": f"Likes: {name}"})
    clock.advance(1)
    replaced = client.put(f"{base}/lines/1", json={"content": "Likes: Ada"})
    assert replaced.status_code == 200, replaced.text

    first = client.get(f"{base}/history", params={"limit": 2})
    assert first.status_code == 200, first.text
    page = first.json()
    assert [(c["version"], c["action"], c["source"]) for c in page["changes"]] == [
        (5, "replace", "rest"),
        (4, "append", "rest"),
    ]
    assert page["changes"][0] == {
        "version": 5,
        "at": datetime.fromtimestamp(clock.now(), UTC).isoformat().replace("+00:00", "Z"),
        "source": "rest",
        "action": "replace",
        "line_number": 1,
        "old_line": "Likes: Alice",
        "new_line": "Likes: Ada",
        "removed": [],
        "added": [],
        "run_id": None,  # a REST edit, in no turn
        "restored_from": None,
    }
    rest = client.get(f"{base}/history", params={"limit": 2, "cursor": page["cursor"]}).json()
    assert [c["new_line"] for c in rest["changes"]] == ["Likes: Bob", "Likes: Alice"]
    assert rest["cursor"] is None
    # The name is normalized as on every block route.
    whole = client.get(f"/agents/{agent_id}/memory/blocks/Human/history").json()
    assert whole == {"changes": [*page["changes"], *rest["changes"]], "cursor": None}


def test_the_history_route_refuses_what_it_cannot_list(client: TestClient) -> None:
    agent_id = new_agent(client)
    base = f"/agents/{agent_id}/memory/blocks"
    missing = client.get(f"{base}/projects/history")
    assert missing.status_code == 404
    assert missing.json()["code"] == "block_not_found"
    assert "Available blocks: human, persona." in missing.json()["message"]
    invalid = client.get(f"{base}/!!!/history")
    assert invalid.status_code == 400
    assert invalid.json()["code"] == "invalid_block_name"
    bad_cursor = client.get(f"{base}/human/history", params={"cursor": "not-a-cursor"})
    assert bad_cursor.status_code == 400
    assert bad_cursor.json()["code"] == "invalid_cursor"
    too_many = client.get(f"{base}/human/history", params={"limit": 101})
    assert too_many.status_code == 422
    unknown_agent = client.get(
        "/agents/0123456789abcdef0123456789abcdef/memory/blocks/human/history"
    )
    assert unknown_agent.status_code == 404
    assert unknown_agent.json()["code"] == "agent_not_found"


def test_deleting_the_agent_deletes_every_history(client: TestClient, tmp_path: Path) -> None:
    agent_id = new_agent(client)
    added = client.post(
        f"/agents/{agent_id}/memory/blocks/human/lines", json={"content": "Name: Ada"}
    )
    assert added.status_code == 201, added.text
    history_of = f"/agents/{agent_id}/memory/blocks/human/history"
    assert len(client.get(history_of).json()["changes"]) == 1
    assert client.delete(f"/agents/{agent_id}").status_code == 204
    with sqlite3.connect(tmp_path / "h.db") as db:
        left = db.execute(
            'SELECT sk FROM "agent-memory" WHERE pk = ?', (keys.agent_partition(agent_id),)
        ).fetchall()
    assert left == []
    assert client.get(history_of).status_code == 404
