"""The `table` fixture: one fresh table on every engine the contract suite pins."""

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api.kit.clock import FrozenClock
from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable
from api.store.dynamodb_local import DynamoDBLocal
from api.store.sqlite import SqliteTable
from api.store.table import Table

ENGINES = ["sqlite", "moto", "dynamodb_local"]


@pytest.fixture(params=ENGINES)
async def table(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock
) -> AsyncIterator[Table]:
    name = f"contract-{uuid.uuid4().hex[:12]}"
    definition = load_definition()
    store: Table
    if request.param == "sqlite":
        store = SqliteTable(tmp_path / "store.db", name, definition, clock=clock)
    elif request.param == "moto":
        endpoint: str = request.getfixturevalue("moto_server")
        store = DynamoTable(name, definition, endpoint_url=endpoint, clock=clock)
    else:
        server: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
        store = DynamoTable(name, definition, endpoint_url=server.endpoint, clock=clock)
    await store.create()
    yield store
    await store.close()


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    """Which engine the test's table runs on: sqlite, moto or dynamodb_local."""
    name: str = request.node.callspec.params["table"]
    return name


def skip_on_moto(engine: str, why: str) -> None:
    """For the few places moto departs from DynamoDB; DynamoDB Local is the reference."""
    if engine == "moto":
        pytest.skip(f"moto departs from DynamoDB here: {why}")
