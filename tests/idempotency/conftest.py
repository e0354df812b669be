"""Idempotency tests: the app over HTTP on a store the test names, and the records it left
read back from that store."""

import asyncio
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.config import Settings
from api.idempotency.models import IdempotencyRecord
from api.kit.clock import FrozenClock
from api.main import create_app
from api.store import keys
from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable
from api.store.dynamodb_local import DynamoDBLocal
from api.store.sqlite import SqliteTable
from api.store.table import Condition, Item, ItemAbsent, Key, Table, Throttled

LOCAL = "http://127.0.0.1"
RECORD = "Idempotency#"  # the sort keys of idempotency records


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(sqlite_path=tmp_path / "app.db", encryption_key="k" * 40)


@pytest.fixture(params=["sqlite", "moto", "dynamodb_local"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock) -> Iterator[Table]:
    """A fresh table on each engine, handed to the app (which leaves it open)."""
    name = f"idempotency-{uuid.uuid4().hex[:12]}"
    definition = load_definition()
    table: Table
    if request.param == "sqlite":
        table = SqliteTable(tmp_path / "store.db", name, definition, clock=clock)
    elif request.param == "moto":
        endpoint: str = request.getfixturevalue("moto_server")
        table = DynamoTable(name, definition, endpoint_url=endpoint, clock=clock)
    else:
        server: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
        table = DynamoTable(name, definition, endpoint_url=server.endpoint, clock=clock)
    yield table
    asyncio.run(table.close())


@pytest.fixture
def app(settings: Settings, store: Table, clock: FrozenClock) -> FastAPI:
    return create_app(settings, table=store, clock=clock)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, base_url=LOCAL) as client:
        yield client


def key(value: str) -> dict[str, str]:
    return {"Idempotency-Key": value}


def records(client: TestClient) -> list[IdempotencyRecord]:
    """Every live idempotency record in the app's table."""
    table: Table = client.app_state["table"]

    async def scan() -> list[Item]:
        found: list[Item] = []
        cursor: str | None = None
        while True:
            page = await table.scan(entity=keys.IDEMPOTENCY_RECORD, cursor=cursor)
            found += page.items
            if page.cursor is None:
                return found
            cursor = page.cursor

    assert client.portal is not None  # the client runs the app (inside `with`)
    return [IdempotencyRecord.from_dynamo_item(item) for item in client.portal.call(scan)]


class FailingStore(SqliteTable):
    """SQLite that fails (Throttled) the writes the test names in `failing`: "user" (the
    local user's creation, on the first request), and of idempotency records "claim" (the
    first write), "settle" (the answer), "renew" and "release"."""

    failing: frozenset[str] = frozenset()

    def _fail(self, step: str) -> None:
        if step in self.failing:
            raise Throttled(f"the test fails the {step}")

    async def put(self, item: Item, *, condition: Condition | None = None) -> None:
        if item["sk"] == "User#Metadata":
            self._fail("user")
        elif item["sk"].startswith(RECORD):
            self._fail("claim" if isinstance(condition, ItemAbsent) else "settle")
        await super().put(item, condition=condition)

    async def update(
        self,
        key: Key,
        *,
        set: Mapping[str, Any] | None = None,
        set_if_absent: Mapping[str, Any] | None = None,
        add: Mapping[str, Any] | None = None,
        remove: Sequence[str] = (),
        condition: Condition | None = None,
    ) -> Item:
        if key.sk.startswith(RECORD):
            self._fail("renew")
        return await super().update(
            key, set=set, set_if_absent=set_if_absent, add=add, remove=remove, condition=condition
        )

    async def delete(self, key: Key, *, condition: Condition | None = None) -> None:
        if key.sk.startswith(RECORD):
            self._fail("release")
        await super().delete(key, condition=condition)
