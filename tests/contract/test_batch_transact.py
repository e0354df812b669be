"""Batches chunked for the caller, and transactions that are all or nothing."""

import pytest

from api.kit.clock import FrozenClock
from api.store.table import (
    AttrEquals,
    Check,
    Delete,
    InvalidItem,
    ItemAbsent,
    ItemExists,
    ItemTooLarge,
    Key,
    Put,
    Table,
    TransactionCancelled,
    Update,
)
from tests.contract.conftest import skip_on_moto

PK = "Agent#a1"


def key(i: int) -> Key:
    return Key(PK, f"Archival#{i:04d}")


async def test_batch_write_and_get_beyond_one_request(table: Table, clock: FrozenClock) -> None:
    await table.batch_write(puts=[{**key(i).as_item(), "i": i} for i in range(130)])
    await table.batch_write(deletes=[key(i) for i in range(0, 130, 2)])
    assert len((await table.query(PK)).items) == 65

    wanted = [key(i) for i in range(129, -1, -1)] + [key(999), key(1)]  # repeats, missing
    got = await table.batch_get(wanted)
    assert [item["i"] for item in got] == list(range(129, 0, -2))

    await table.put({**key(1).as_item(), "ttl": int(clock.now()) - 1})
    assert key(1).sk not in {item["sk"] for item in await table.batch_get(wanted)}


async def test_batch_write_keeps_the_last_write_per_key(table: Table) -> None:
    await table.batch_write(
        puts=[{**key(1).as_item(), "v": "first"}, {**key(1).as_item(), "v": "second"}]
    )
    assert (await table.get(key(1)) or {})["v"] == "second"
    await table.batch_write(puts=[{**key(2).as_item(), "v": 1}], deletes=[key(2)])
    assert await table.get(key(2)) is None


async def test_a_transaction_applies_everything(table: Table) -> None:
    await table.put({**key(1).as_item(), "version": 1})
    await table.put({**key(2).as_item(), "gone": True})
    await table.put({**key(3).as_item(), "guard": True})
    await table.transact_write(
        [
            Put({**key(4).as_item(), "v": "new"}, condition=ItemAbsent()),
            Update(
                key(1), set={"version": 2}, add={"edits": 1}, condition=AttrEquals("version", 1)
            ),
            Delete(key(2)),
            Check(key(3), ItemExists()),
        ]
    )
    assert (await table.get(key(4)) or {})["v"] == "new"
    assert await table.get(key(1)) == {**key(1).as_item(), "version": 2, "edits": 1}
    assert await table.get(key(2)) is None


async def test_a_transaction_with_one_failed_condition_applies_nothing(table: Table) -> None:
    await table.put({**key(1).as_item(), "version": 1})
    await table.put({**key(2).as_item(), "v": "kept"})
    with pytest.raises(TransactionCancelled) as raised:
        await table.transact_write(
            [
                Put({**key(3).as_item(), "v": "new"}, condition=ItemAbsent()),
                Update(key(1), set={"version": 2}, condition=AttrEquals("version", 7)),
                Delete(key(2)),
            ]
        )
    assert raised.value.reasons == [None, "ConditionalCheckFailed", None]
    assert await table.get(key(3)) is None
    assert (await table.get(key(1)) or {})["version"] == 1
    assert (await table.get(key(2)) or {})["v"] == "kept"


async def test_a_refusal_is_told_by_the_label_of_the_operation_refused(table: Table) -> None:
    await table.put({**key(1).as_item(), "version": 1})
    await table.put({**key(2).as_item(), "v": "kept"})
    with pytest.raises(TransactionCancelled) as raised:
        await table.transact_write(
            [
                Update(
                    key(1), set={"version": 2}, condition=AttrEquals("version", 1), label="lines"
                ),
                Put({**key(2).as_item(), "v": "new"}, condition=ItemAbsent(), label="guard"),
                Check(key(3), ItemAbsent(), label="guard"),  # a label two operations share
                Delete(key(4), label="other"),
            ]
        )
    cancelled = raised.value
    assert cancelled.labels == ["lines", "guard", "guard", "other"]
    assert cancelled.refused("guard")
    assert cancelled.failed("guard")
    for label in ("lines", "other", "unknown", ""):
        assert not cancelled.refused(label), label
        assert not cancelled.failed(label), label


async def test_a_refused_update_of_an_expired_item_is_told_by_its_label(
    table: Table, clock: FrozenClock
) -> None:
    """DynamoDB purges the expired item and tries again: the second refusal is labelled too."""
    await table.put({**key(1).as_item(), "version": 1, "ttl": int(clock.now()) + 10})
    clock.advance(60)
    with pytest.raises(TransactionCancelled) as raised:
        await table.transact_write(
            [
                Update(key(1), set={"version": 2}, condition=ItemExists(), label="lines"),
                Put({**key(2).as_item(), "v": "new"}, label="change"),
            ]
        )
    assert raised.value.refused("lines")
    assert not raised.value.refused("change")
    assert await table.get(key(2)) is None


async def test_a_guard_item_makes_creation_unique(table: Table) -> None:
    """The pattern idempotent creation builds on: entity and guard written together."""

    async def create(agent_id: str) -> bool:
        try:
            await table.transact_write(
                [
                    Put(
                        {"pk": "User#a", "sk": "AgentName#helper", "agent_id": agent_id},
                        condition=ItemAbsent(),
                    ),
                    Put({"pk": "User#a", "sk": f"Agent#{agent_id}"}, condition=ItemAbsent()),
                ]
            )
            return True
        except TransactionCancelled:
            return False

    assert await create("one")
    assert not await create("two")
    assert await table.get(Key("User#a", "Agent#two")) is None


async def test_a_transaction_may_touch_an_item_once(table: Table) -> None:
    with pytest.raises(InvalidItem):
        await table.transact_write([Put(key(1).as_item()), Delete(key(1))])
    with pytest.raises(InvalidItem):
        await table.transact_write([Put({**key(i).as_item()}) for i in range(101)])
    assert (await table.query(PK)).items == []


async def test_put_each_makes_every_put_its_condition_allows(table: Table) -> None:
    await table.put({**key(1).as_item(), "v": "kept"})
    made = await table.put_each(
        [
            Put({**key(1).as_item(), "v": "over"}, condition=ItemAbsent()),  # refused alone
            Put({**key(2).as_item(), "v": "new"}, condition=ItemAbsent()),
            Put({**key(3).as_item(), "v": "plain"}),
        ]
    )
    assert made == [False, True, True]
    assert (await table.get(key(1)) or {})["v"] == "kept"
    assert (await table.get(key(2)) or {})["v"] == "new"
    assert (await table.get(key(3)) or {})["v"] == "plain"
    assert await table.put_each([]) == []


async def test_put_each_refuses_an_item_twice_and_writes_nothing(table: Table) -> None:
    with pytest.raises(InvalidItem, match="only once"):
        await table.put_each([Put({**key(1).as_item(), "v": 1}), Put({**key(1).as_item()})])
    assert await table.get(key(1)) is None


async def test_put_each_refuses_an_item_too_large_before_writing_any(table: Table) -> None:
    with pytest.raises(ItemTooLarge):
        await table.put_each(
            [Put({**key(1).as_item(), "v": "small"}), Put({**key(2).as_item(), "v": "x" * 500_000})]
        )
    assert await table.get(key(1)) is None


UNSTORABLE = [
    pytest.param({"v": float("nan")}, InvalidItem, id="nan"),
    pytest.param({"v": "x" * 500_000}, ItemTooLarge, id="too-large"),
]


@pytest.mark.parametrize(("extra", "error"), UNSTORABLE)
async def test_an_unstorable_put_is_refused_whatever_its_condition(
    table: Table, extra: dict[str, object], error: type[Exception]
) -> None:
    """As DynamoDB does: the item is checked before the condition is evaluated."""
    await table.put({**key(1).as_item(), "v": "kept"})
    with pytest.raises(error):
        await table.put({**key(1).as_item(), **extra}, condition=ItemAbsent())
    with pytest.raises(error):
        await table.put_each(
            [
                Put({**key(2).as_item(), "v": "new"}),
                Put({**key(1).as_item(), **extra}, condition=ItemAbsent()),
            ]
        )
    assert (await table.get(key(1)) or {})["v"] == "kept"
    assert await table.get(key(2)) is None


@pytest.mark.parametrize(("extra", "error"), UNSTORABLE)
async def test_an_unstorable_put_fails_a_transaction_whatever_the_conditions(
    table: Table, engine: str, extra: dict[str, object], error: type[Exception]
) -> None:
    if error is ItemTooLarge:
        skip_on_moto(engine, "it evaluates a transaction's conditions before its items' size")
    await table.put({**key(1).as_item(), "v": "kept"})
    with pytest.raises(error):
        await table.transact_write(
            [
                Put({**key(1).as_item(), **extra}, condition=ItemAbsent()),
                Check(key(2), ItemExists()),
            ]
        )
    assert (await table.get(key(1)) or {})["v"] == "kept"
