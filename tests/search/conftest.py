"""Search tests: the engine on a SQLite file with the shipped static model, unless a test
names another store or backend."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api.embeddings.base import Embedder
from api.embeddings.factory import get_embedding_backend
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Table

AGENT = "agent-1"


@pytest.fixture(scope="session")
def static() -> Embedder:
    embedder = get_embedding_backend("static")
    assert embedder is not None
    return embedder


@pytest.fixture
async def store(tmp_path: Path, clock: FrozenClock) -> AsyncIterator[Table]:
    sqlite = SqliteTable(tmp_path / "search.db", "search-test", load_definition(), clock=clock)
    await sqlite.create()
    yield sqlite
    await sqlite.close()


@pytest.fixture
def repos(store: Table) -> Repositories:
    return Repositories.over(store)


@pytest.fixture
def engine(repos: Repositories, static: Embedder, clock: FrozenClock) -> SearchEngine:
    return SearchEngine(repos.search, static, clock)
