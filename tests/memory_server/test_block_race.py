"""A PUT of seed 002 racing the agent appending to the same block: nothing is lost unseen.
The PUT is written on the version it read; a write landing in between makes it read again,
so every write takes a version of its own and the block ends as the writes in version
order made it. A client that sends If-Match writes only on what it read."""

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI

from api.kit.clock import FrozenClock
from api.main import create_app
from api.memory import service as memory
from api.repositories import Repositories
from api.store import keys
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Put, Table, TxOp
from tests.contract.conftest import skip_on_moto
from tests.fakes.serving import serve_in_thread
from tests.memory_server.conftest import local_settings, new_agent
from tests.runtime.conftest import running

APPENDS = 20
REPLACEMENT = ["Replaced A", "Replaced B"]


@pytest.fixture
def server(tmp_path: Path, clock: FrozenClock) -> Iterator[str]:
    """Our app under real uvicorn, its requests served concurrently."""

    def build(root: str) -> tuple[str, FastAPI]:
        return root, create_app(local_settings(tmp_path), clock=clock)

    with serve_in_thread("seed002", build, "/health", lifespan="on") as root:
        yield root


def test_a_put_racing_twenty_appends_over_http_loses_nothing(server: str) -> None:
    with httpx2.Client(base_url=server, timeout=60) as http:
        agent_id = new_agent(http)["id"]  # type: ignore[arg-type]
        start = threading.Barrier(APPENDS + 1)

        def append(i: int) -> dict[str, Any]:
            start.wait()
            # What the agent's core_memory_append does, through its REST twin.
            added = http.post(
                f"/agents/{agent_id}/memory/blocks/human/lines", json={"content": f"Fact {i}"}
            )
            assert added.status_code == 201, added.text
            body: dict[str, Any] = added.json()
            return body

        def replace() -> dict[str, Any]:
            start.wait()
            put = http.put("/memory-blocks/my_agent/human", json={"value": "\n".join(REPLACEMENT)})
            assert put.status_code == 200, put.text
            body: dict[str, Any] = put.json()
            return body

        with ThreadPoolExecutor(APPENDS + 1) as pool:
            appended = [pool.submit(append, i) for i in range(APPENDS // 2)]
            replaced = pool.submit(replace)
            appended += [pool.submit(append, i) for i in range(APPENDS // 2, APPENDS)]
            appends = [f.result() for f in appended]
            put = replaced.result()
        final = http.get("/memory-blocks/my_agent/human").json()

    # Every write took a version of its own: none was made on a version another also wrote.
    versions = sorted([a["block"]["version"] for a in appends] + [put["version"]])
    assert versions == list(range(2, 2 + APPENDS + 1))
    assert final["version"] == 1 + APPENDS + 1
    # The PUT's result is its value; what was appended after it is all there, in order.
    assert put["value"] == "\n".join(REPLACEMENT)
    after = sorted((a for a in appends if a["block"]["version"] > put["version"]), key=by_version)
    assert final["value"].split("\n") == REPLACEMENT + [a["line"] for a in after]
    # And what was appended before it, the PUT saw and replaced, as its caller asked.
    before = [a for a in appends if a["block"]["version"] < put["version"]]
    assert len(before) + len(after) == APPENDS


def by_version(append: dict[str, Any]) -> int:
    version: int = append["block"]["version"]
    return version


class AppendingFirst(SqliteTable):
    """A table on which the agent appends to the block right before the next write of its
    lines lands: the PUT has read the block, the append comes in between."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.meanwhile: Callable[[], Awaitable[Any]] | None = None

    async def transact_write(self, ops: Sequence[TxOp]) -> None:
        # A block's lines are written with their line history, in one transaction.
        lines = any(
            isinstance(op, Put) and op.item.get(keys.ENTITY) == keys.CORE_MEMORY for op in ops
        )
        if self.meanwhile is not None and lines:
            meanwhile, self.meanwhile = self.meanwhile, None
            await meanwhile()
        await super().transact_write(ops)


def test_a_put_reads_again_when_an_append_lands_between_its_read_and_write(
    tmp_path: Path, clock: FrozenClock
) -> None:
    table = AppendingFirst(tmp_path / "race.db", "race", load_definition(), clock=clock)
    repos = Repositories.over(table)
    with running(local_settings(tmp_path), clock, table) as client:
        agent_id = new_agent(client)["id"]
        table.meanwhile = lambda: memory.append_line(repos, agent_id, "human", "Appended meanwhile")
        put = client.put("/memory-blocks/my_agent/human", json={"value": "Name: Alice"})
        assert put.status_code == 200, put.text
        assert table.meanwhile is None  # the append did land between the PUT's read and write
        # The PUT did not write version 2 over the append's version 2: it read again, and
        # its write is version 3, made on a block it saw.
        assert put.json()["version"] == 3
        final = client.get("/memory-blocks/my_agent/human").json()
        assert (final["value"], final["version"]) == ("Name: Alice", 3)


def test_with_if_match_a_put_never_drops_an_append_it_did_not_see(
    tmp_path: Path, clock: FrozenClock
) -> None:
    with running(local_settings(tmp_path), clock) as client:
        agent_id = new_agent(client)["id"]
        read = client.get("/memory-blocks/my_agent/human")
        appended = client.post(
            f"/agents/{agent_id}/memory/blocks/human/lines", json={"content": "Likes tea"}
        )
        assert appended.status_code == 201
        stale = client.put(
            "/memory-blocks/my_agent/human",
            json={"value": "Name: Alice"},
            headers={"If-Match": read.headers["ETag"]},
        )
        assert stale.status_code == 412
        assert client.get("/memory-blocks/my_agent/human").json()["value"] == "Likes tea"
        again = client.put(
            "/memory-blocks/my_agent/human",
            json={"value": "Likes tea\nName: Alice"},
            headers={"If-Match": stale.headers["ETag"]},
        )
        assert again.status_code == 200
        assert again.json()["value"] == "Likes tea\nName: Alice"


async def test_replacing_and_appending_at_once_on_every_engine(table: Table, engine: str) -> None:
    """What the PUT route calls (write_lines, no If-Match) racing what the agent's append
    tool calls (append_line), on each engine."""
    repos = Repositories.over(table)
    skip_on_moto(engine, "its in-process tables are not thread-safe; conditional puts race")
    agent_id = "agent-race"
    await memory.ensure_default_blocks(repos, agent_id)

    async def replace() -> memory.BlockView:
        await asyncio.sleep(0.005)
        return await memory.write_lines(repos, agent_id, "human", REPLACEMENT)

    put, *appends = await asyncio.gather(
        replace(), *(memory.append_line(repos, agent_id, "human", f"Fact {i}") for i in range(10))
    )
    assert isinstance(put, memory.BlockView)
    changes = [a for a in appends if isinstance(a, memory.LineChange)]
    versions = sorted([c.block.version for c in changes] + [put.version])
    assert versions == list(range(2, 2 + 11))
    final = await memory.read_block(repos, agent_id, "human")
    after = sorted(
        (c for c in changes if c.block.version > put.version), key=lambda c: c.block.version
    )
    assert list(final.lines) == REPLACEMENT + [c.line for c in after]
