"""Bad input fails with a typed error before anything is written."""

import base64
import json

import pytest

from api.store.table import (
    InvalidCursor,
    InvalidItem,
    InvalidKey,
    Key,
    Put,
    Sk,
    Table,
    UnknownIndex,
)

PK = "Agent#a1"


@pytest.fixture
async def stored(table: Table) -> list[dict[str, object]]:
    items: list[dict[str, object]] = [{"pk": PK, "sk": f"Archival#{i}", "v": i} for i in range(6)]
    await table.batch_write(puts=items)
    return items


def encode(position: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode()


@pytest.mark.parametrize(
    "cursor",
    [
        "not a cursor!",
        "%%%",
        encode(["pk", "sk"]),
        encode({"pk": PK}),
        encode({"pk": PK, "sk": 3}),
        encode({"pk": PK, "sk": "Archival#1", "extra": "x"}),
        encode({"pk": "Agent#someone-else", "sk": "Archival#1"}),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
async def test_a_malformed_cursor_is_refused(
    table: Table, stored: list[dict[str, object]], cursor: str
) -> None:
    with pytest.raises(InvalidCursor):
        await table.query(PK, limit=2, cursor=cursor)
    assert len((await table.query(PK)).items) == len(stored)


async def test_a_cursor_from_the_table_is_refused_on_an_index(
    table: Table, stored: list[dict[str, object]]
) -> None:
    page = await table.query(PK, limit=2)
    assert page.cursor is not None
    with pytest.raises(InvalidCursor):
        await table.query(PK, index="gsi1", cursor=page.cursor)


async def test_an_unknown_index_is_refused(table: Table, stored: list[dict[str, object]]) -> None:
    with pytest.raises(UnknownIndex, match="gsi1"):
        await table.query(PK, index="by_email")


@pytest.mark.parametrize("key", [Key("", "sk"), Key("pk", ""), Key("", "")])
async def test_a_key_with_an_empty_part_is_refused(
    table: Table, stored: list[dict[str, object]], key: Key
) -> None:
    with pytest.raises(InvalidKey):
        await table.get(key)
    with pytest.raises(InvalidKey):
        await table.put({**key.as_item(), "v": 1})
    with pytest.raises(InvalidKey):
        await table.update(key, set={"v": 1})
    with pytest.raises(InvalidKey):
        await table.delete(key)
    with pytest.raises(InvalidKey):
        await table.transact_write([Put({"pk": PK, "sk": "fine"}), Put(key.as_item())])
    assert await table.get(Key(PK, "fine")) is None
    assert len((await table.query(PK)).items) == len(stored)


async def test_bad_queries_are_refused(table: Table, stored: list[dict[str, object]]) -> None:
    with pytest.raises(InvalidKey):
        await table.query("")
    with pytest.raises(InvalidKey):
        await table.query(PK, sk=Sk.begins_with(""))
    with pytest.raises(InvalidKey):
        await table.query(PK, sk=Sk.between("b", "a"))
    with pytest.raises(InvalidItem):
        await table.query(PK, limit=0)


async def test_bad_items_and_updates_are_refused(
    table: Table, stored: list[dict[str, object]]
) -> None:
    with pytest.raises(InvalidKey):
        await table.put({"pk": PK, "sk": "x", "gsi1pk": ""})
    with pytest.raises(InvalidKey):
        await table.put({"pk": PK})
    with pytest.raises(InvalidItem):
        await table.put({"pk": PK, "sk": "x", "v": object()})
    with pytest.raises(InvalidItem):
        await table.update(Key(PK, "Archival#1"), set={"pk": "other"})
    with pytest.raises(InvalidItem):
        await table.update(Key(PK, "Archival#1"), set={"v": 1}, remove=["v"])
    with pytest.raises(InvalidItem):
        await table.update(Key(PK, "Archival#1"))
    assert await table.get(Key(PK, "x")) is None
    assert (await table.get(Key(PK, "Archival#1")) or {})["v"] == 1
