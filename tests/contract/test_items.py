"""Single-item behaviour every engine shares: round trips, updates, conditions, size."""

import asyncio
from decimal import Decimal

import pytest

from api.kit.clock import FrozenClock
from api.store.table import (
    AttrAbsent,
    AttrEquals,
    AttrExists,
    ConditionFailed,
    InvalidItem,
    ItemAbsent,
    ItemExists,
    ItemTooLarge,
    Key,
    Table,
    all_of,
    any_of,
)
from tests.contract.conftest import skip_on_moto

KEY = Key("User#alice@example.com", "Agent#a1")


async def test_put_then_get_round_trips(table: Table) -> None:
    await table.put({**KEY.as_item(), "entity": "Agent", "name": "Helper"})
    assert await table.get(KEY) == {**KEY.as_item(), "entity": "Agent", "name": "Helper"}
    assert await table.get(Key(KEY.pk, "Agent#other")) is None


async def test_values_round_trip_with_their_types(table: Table) -> None:
    values = {
        "int": 42,
        "negative": -7,
        "large_int": 10**37 + 3,
        "big_negative": -(2**100),
        "decimal": Decimal("3.14159"),
        "float": 0.1,
        "zero": 0,
        "bytes": b"\x00\xffbinary\x10",
        "bytes_in_list": [b"a", b""],
        "true": True,
        "false": False,
        "none": None,
        "text": "naïve café 中文 😀",
        "empty": "",
        "list": [1, "two", Decimal("3.5"), [b"x"], {"k": "v"}],
        "map": {"nested": {"deep": [1, 2, 3]}, "n": Decimal("-0.5")},
        "string_set": {"a", "b"},
        "number_set": {1, 2, 3},
    }
    await table.put({**KEY.as_item(), **values})
    got = await table.get(KEY)
    assert got is not None
    expected = {**values, "float": Decimal("0.1")}
    for name, value in expected.items():
        assert got[name] == value, name
        assert type(got[name]) is type(value), name
    assert type(got["list"][2]) is Decimal
    assert type(got["map"]["nested"]["deep"][0]) is int


async def test_numbers_beyond_38_digits_are_refused(table: Table) -> None:
    with pytest.raises(InvalidItem):
        await table.put({**KEY.as_item(), "n": 10**40 + 1})
    assert await table.get(KEY) is None


async def test_conditional_put_fails_and_keeps_the_item(table: Table) -> None:
    await table.put({**KEY.as_item(), "v": 1}, condition=ItemAbsent())
    with pytest.raises(ConditionFailed):
        await table.put({**KEY.as_item(), "v": 2}, condition=ItemAbsent())
    assert (await table.get(KEY) or {})["v"] == 1
    await table.put({**KEY.as_item(), "v": 3}, condition=ItemExists())
    with pytest.raises(ConditionFailed):
        await table.put({**Key(KEY.pk, "Agent#none").as_item()}, condition=ItemExists())
    assert await table.get(Key(KEY.pk, "Agent#none")) is None


async def test_update_sets_adds_removes_and_returns_the_item(table: Table) -> None:
    created = await table.update(KEY, set={"name": "a"}, add={"count": 2})
    assert created == {**KEY.as_item(), "name": "a", "count": 2}
    updated = await table.update(
        KEY,
        set={"name": "b"},
        set_if_absent={"created": "t0", "name_seen": True},
        add={"count": 3, "score": Decimal("0.5")},
    )
    assert updated["name"] == "b"
    assert updated["count"] == 5
    assert updated["score"] == Decimal("0.5")
    again = await table.update(KEY, set_if_absent={"created": "t1"}, remove=["name_seen"])
    assert again["created"] == "t0"
    assert "name_seen" not in again
    assert await table.get(KEY) == again


async def test_conditional_update_with_a_version_refuses_a_stale_writer(table: Table) -> None:
    await table.put({**KEY.as_item(), "version": 1, "lines": ["a"]})
    await table.update(
        KEY, set={"lines": ["a", "b"], "version": 2}, condition=AttrEquals("version", 1)
    )
    with pytest.raises(ConditionFailed):
        await table.update(
            KEY, set={"lines": ["stale"], "version": 2}, condition=AttrEquals("version", 1)
        )
    assert (await table.get(KEY) or {})["lines"] == ["a", "b"]


async def test_attribute_conditions(table: Table) -> None:
    await table.put({**KEY.as_item(), "a": "x"})
    await table.update(KEY, set={"b": 1}, condition=all_of(AttrExists("a"), AttrAbsent("b")))
    with pytest.raises(ConditionFailed):
        await table.update(KEY, set={"c": 1}, condition=AttrAbsent("b"))
    with pytest.raises(ConditionFailed):
        await table.update(KEY, set={"c": 1}, condition=AttrEquals("a", "y"))
    assert "c" not in (await table.get(KEY) or {})


async def test_either_of_two_conditions(table: Table) -> None:
    """A draft: written where nothing is, or over an earlier draft, never over the final."""
    draft = any_of(ItemAbsent(), AttrEquals("draft", True))
    await table.put({**KEY.as_item(), "draft": True, "text": "Hel"}, condition=draft)
    await table.put({**KEY.as_item(), "draft": True, "text": "Hello"}, condition=draft)
    await table.put({**KEY.as_item(), "draft": False, "text": "Hello!"}, condition=draft)
    with pytest.raises(ConditionFailed):
        await table.put({**KEY.as_item(), "draft": True, "text": "Hell"}, condition=draft)
    assert (await table.get(KEY) or {})["text"] == "Hello!"


async def test_concurrent_counter_adds_all_land(table: Table, engine: str) -> None:
    skip_on_moto(engine, "its in-process tables are not thread-safe; concurrent ADDs race")
    await asyncio.gather(*(table.update(KEY, add={"n": 1}) for _ in range(20)))
    assert (await table.get(KEY) or {})["n"] == 20


async def test_add_to_a_non_number_is_refused(table: Table) -> None:
    await table.put({**KEY.as_item(), "name": "text"})
    with pytest.raises(InvalidItem):
        await table.update(KEY, add={"name": 1})
    assert (await table.get(KEY) or {})["name"] == "text"


async def test_delete_with_and_without_condition(table: Table) -> None:
    await table.put({**KEY.as_item(), "version": 1})
    with pytest.raises(ConditionFailed):
        await table.delete(KEY, condition=AttrEquals("version", 2))
    assert await table.get(KEY) is not None
    await table.delete(KEY, condition=AttrEquals("version", 1))
    assert await table.get(KEY) is None
    await table.delete(KEY)  # deleting what is gone is not an error


async def test_an_item_over_400_kb_is_refused(table: Table) -> None:
    await table.put({**KEY.as_item(), "body": "small"})
    with pytest.raises(ItemTooLarge):
        await table.put({**KEY.as_item(), "body": "x" * (401 * 1024)})
    with pytest.raises(ItemTooLarge):
        await table.update(KEY, set={"body": b"\x01" * (401 * 1024)})
    assert (await table.get(KEY) or {})["body"] == "small"
    await table.put({**KEY.as_item(), "body": "x" * (390 * 1024)})  # moto caps at 405000


async def test_expired_items_are_invisible_and_count_as_absent(
    table: Table, clock: FrozenClock
) -> None:
    now = int(clock.now())
    await table.put({**KEY.as_item(), "ttl": now + 60, "v": "live"})
    assert await table.get(KEY) is not None
    clock.advance(120)
    assert await table.get(KEY) is None
    with pytest.raises(ConditionFailed):
        await table.put({**KEY.as_item(), "v": "x"}, condition=ItemExists())
    await table.put({**KEY.as_item(), "v": "new"}, condition=ItemAbsent())
    assert (await table.get(KEY) or {})["v"] == "new"
