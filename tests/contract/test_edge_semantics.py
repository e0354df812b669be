"""Where engines naturally differ, the adapters agree: expiry on writes, number precision,
strict equality, checked batches, and what DynamoDB refuses."""

from decimal import Decimal
from typing import Any

import pytest

from api.kit.clock import FrozenClock
from api.store.table import (
    AttrAbsent,
    AttrEquals,
    AttrExists,
    ConditionFailed,
    InvalidCursor,
    InvalidItem,
    InvalidKey,
    ItemTooLarge,
    Key,
    Put,
    Sk,
    StoreError,
    Table,
    Update,
)
from tests.contract.conftest import skip_on_moto

KEY = Key("Agent#a1", "CoreMemory#human")


@pytest.fixture
async def expired(table: Table, clock: FrozenClock) -> Key:
    await table.put({**KEY.as_item(), "n": 5, "old": "stale", "ttl": int(clock.now()) + 10})
    clock.advance(60)
    return KEY


async def test_an_update_of_an_expired_item_starts_from_nothing(table: Table, expired: Key) -> None:
    updated = await table.update(expired, add={"n": 1})
    assert updated == {**expired.as_item(), "n": 1}
    assert await table.get(expired) == updated


async def test_attribute_conditions_see_no_attributes_on_an_expired_item(
    table: Table, expired: Key
) -> None:
    with pytest.raises(ConditionFailed):
        await table.update(expired, set={"x": 1}, condition=AttrExists("old"))
    with pytest.raises(ConditionFailed):
        await table.update(expired, set={"x": 1}, condition=AttrEquals("n", 5))
    await table.update(expired, set={"x": 1}, condition=AttrAbsent("old"))
    assert await table.get(expired) == {**expired.as_item(), "x": 1}


async def test_a_transaction_updating_an_expired_item_starts_from_nothing(
    table: Table, expired: Key
) -> None:
    await table.transact_write([Update(expired, add={"n": 2}), Put({"pk": "p", "sk": "s"})])
    assert await table.get(expired) == {**expired.as_item(), "n": 2}


async def test_add_keeps_38_digits(table: Table, engine: str) -> None:
    skip_on_moto(engine, "its ADD rounds to Python's 28 digits")
    await table.update(KEY, add={"n": 10**30})
    got = await table.update(KEY, add={"n": Decimal("0.5")})
    assert got["n"] == Decimal("1000000000000000000000000000000.5")
    big = await table.update(Key(KEY.pk, "big"), add={"n": Decimal("9E+37")})
    assert big["n"] == 9 * 10**37
    bigger = await table.update(Key(KEY.pk, "big"), add={"n": Decimal("9E+37")})
    assert bigger["n"] == 18 * 10**37
    assert (await table.get(Key(KEY.pk, "big")) or {})["n"] == 18 * 10**37


async def test_equality_conditions_compare_types(table: Table, engine: str) -> None:
    skip_on_moto(engine, "its `=` holds between true and 1")
    await table.put({**KEY.as_item(), "flag": True, "zero": 0, "price": Decimal("1.50")})
    with pytest.raises(ConditionFailed):
        await table.update(KEY, set={"x": 1}, condition=AttrEquals("flag", 1))
    with pytest.raises(ConditionFailed):
        await table.update(KEY, set={"x": 1}, condition=AttrEquals("zero", False))
    await table.update(KEY, set={"x": 1}, condition=AttrEquals("price", Decimal("1.5")))
    await table.update(KEY, set={"x": 2}, condition=AttrEquals("flag", True))


async def test_numbers_and_binaries_come_back_in_one_form(table: Table) -> None:
    await table.put(
        {
            **KEY.as_item(),
            "price": Decimal("1.50"),
            "hundred": Decimal("1E+2"),
            "tiny": Decimal("0.000001"),
            "bin_set": {b"a", b"bc"},
            "empty_bytes": b"",
        }
    )
    got = await table.get(KEY) or {}
    assert str(got["price"]) == "1.5"
    assert got["hundred"] == 100
    assert type(got["hundred"]) is int
    assert got["tiny"] == Decimal("0.000001")
    assert got["bin_set"] == {b"a", b"bc"}
    assert got["empty_bytes"] == b""


async def test_names_that_look_like_the_sqlite_encoding_are_plain_names(table: Table) -> None:
    # SQLite's text form writes bytes as {"$b": base64}; a map key "$b" is still a key.
    odd = {"$b": "not base64!", "inner": {"$b": b"\x01"}}
    await table.put({**KEY.as_item(), "odd": odd, "bytes_map": {"$b": b"\x00"}})
    got = await table.get(KEY) or {}
    assert got["odd"] == odd
    assert got["bytes_map"] == {"$b": b"\x00"}


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"d": value}
    return value


@pytest.mark.parametrize(
    "bad",
    [
        {"empty_set": set()},
        {"": "no name"},
        {"map": {"": 1}},
        {"deep": nested(33)},
        {"surrogate": "x\ud800"},
    ],
    ids=["empty_set", "empty_name", "empty_map_key", "too_deep", "lone_surrogate"],
)
async def test_what_dynamodb_refuses_is_refused_everywhere(
    table: Table, bad: dict[str, Any]
) -> None:
    with pytest.raises(InvalidItem):
        await table.put({**KEY.as_item(), **bad})
    assert await table.get(KEY) is None
    await table.put({**KEY.as_item(), "deep": nested(31)})


async def test_add_to_an_index_key_is_refused(table: Table) -> None:
    with pytest.raises(InvalidKey):
        await table.update(KEY, add={"gsi1sk": 1})
    assert await table.get(KEY) is None


async def test_a_batch_with_an_oversized_item_writes_nothing(table: Table) -> None:
    puts = [{"pk": KEY.pk, "sk": f"Archival#{i:03d}"} for i in range(60)]
    puts[55]["body"] = "x" * (401 * 1024)
    with pytest.raises(ItemTooLarge):
        await table.batch_write(puts=puts)
    assert (await table.query(KEY.pk)).items == []


async def test_an_oversized_item_in_a_transaction_writes_nothing(table: Table) -> None:
    with pytest.raises(ItemTooLarge):
        await table.transact_write(
            [Put({"pk": KEY.pk, "sk": "a"}), Put({"pk": KEY.pk, "sk": "b", "x": "y" * 420_000})]
        )
    assert (await table.query(KEY.pk)).items == []


async def test_a_cursor_continues_only_its_own_query(table: Table) -> None:
    await table.batch_write(
        puts=[{"pk": KEY.pk, "sk": f"{p}#{i}"} for p in ("A", "B") for i in range(4)]
    )
    page = await table.query(KEY.pk, sk=Sk.begins_with("A#"), limit=2)
    assert page.cursor is not None
    with pytest.raises(InvalidCursor):
        await table.query(KEY.pk, sk=Sk.begins_with("B#"), limit=2, cursor=page.cursor)
    with pytest.raises(InvalidCursor):
        await table.query(
            KEY.pk, sk=Sk.begins_with("A#"), limit=2, cursor=page.cursor, forward=False
        )
    rest = await table.query(KEY.pk, sk=Sk.begins_with("A#"), limit=2, cursor=page.cursor)
    assert [i["sk"] for i in rest.items] == ["A#2", "A#3"]


async def test_a_closed_table_refuses_calls(table: Table) -> None:
    await table.close()
    with pytest.raises(StoreError):
        await table.get(KEY)
    await table.close()  # closing twice is harmless
