"""Memory tests: the tool replies on a fast SQLite store; concurrency on every engine."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api.kit.clock import FrozenClock
from api.memory import service as memory_service
from api.memory.summarizer import TruncatingSummarizer
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Table
from api.tools.native import ToolContext
from tests.contract.conftest import engine, table

__all__ = ["engine", "table"]

AGENT = "agent-1"


@pytest.fixture
async def store(tmp_path: Path, clock: FrozenClock) -> AsyncIterator[Table]:
    sqlite = SqliteTable(tmp_path / "memory.db", "memory-test", load_definition(), clock=clock)
    await sqlite.create()
    yield sqlite
    await sqlite.close()


@pytest.fixture
def repos(store: Table) -> Repositories:
    return Repositories.over(store)


@pytest.fixture
def search(repos: Repositories, clock: FrozenClock) -> SearchEngine:
    return SearchEngine(repos.search, None, clock)


@pytest.fixture
async def ctx(repos: Repositories, search: SearchEngine) -> ToolContext:
    await memory_service.ensure_default_blocks(repos, AGENT)
    return ToolContext(repos, search, AGENT, TruncatingSummarizer())
