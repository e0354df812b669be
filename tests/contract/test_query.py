"""Queries every engine answers alike: order, sort-key conditions, pages, indexes, TTL."""

from typing import Any

import pytest

from api.kit.clock import FrozenClock
from api.store.table import Page, Sk, SkCondition, Table

PK = "Agent#a1"
# '#' separators, case, spaces and characters from 1 to 4 UTF-8 bytes.
SORT_KEYS = [
    "Archival#2024-01-02#b",
    "Archival#2024-01-02#a",
    "Archival#2024-01-10#c",
    "Archival#",
    "Archival",
    "Archival-x",
    "Archival#2024-01-02",
    "CoreMemory#human",
    "CoreMemory#persona",
    "a",
    "A",
    "Z",
    "a b",
    "ab",
    "é",
    "e",
    "ü",
    "中文",
    "😀",
    "\u00ff",
    "\u0100",
    "~",
    "#",
    "##",
    "#a",
]


def utf8_order(keys: list[str]) -> list[str]:
    return sorted(keys, key=lambda k: k.encode("utf-8"))


async def fill(table: Table, pk: str = PK, keys: list[str] = SORT_KEYS) -> None:
    await table.batch_write(puts=[{"pk": pk, "sk": k, "n": i} for i, k in enumerate(keys)])


async def all_pages(table: Table, pk: str, limit: int, **kwargs: object) -> list[Page]:
    pages = []
    cursor = None
    while True:
        page = await table.query(pk, limit=limit, cursor=cursor, **kwargs)  # type: ignore[arg-type]
        pages.append(page)
        if page.cursor is None:
            return pages
        cursor = page.cursor


def sks(page: Page) -> list[str]:
    return [item["sk"] for item in page.items]


async def test_sort_keys_come_back_in_utf8_byte_order(table: Table) -> None:
    await fill(table)
    await table.put({"pk": "Agent#a2", "sk": "a"})
    page = await table.query(PK)
    assert sks(page) == utf8_order(SORT_KEYS)
    assert page.cursor is None
    reverse = await table.query(PK, forward=False)
    assert sks(reverse) == list(reversed(utf8_order(SORT_KEYS)))


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        (Sk.eq("ab"), lambda k: k == "ab"),
        (Sk.begins_with("Archival#"), lambda k: k.startswith("Archival#")),
        (Sk.begins_with("Archival#2024-01-02"), lambda k: k.startswith("Archival#2024-01-02")),
        (Sk.begins_with("中"), lambda k: k.startswith("中")),
        (Sk.begins_with("#"), lambda k: k.startswith("#")),
        (
            Sk.between("Archival#2024-01-02", "Archival#2024-01-10#c"),
            lambda k: b"Archival#2024-01-02" <= k.encode() <= b"Archival#2024-01-10#c",
        ),
        (Sk.lt("CoreMemory"), lambda k: k.encode() < b"CoreMemory"),
        (Sk.le("ab"), lambda k: k.encode() <= b"ab"),
        (Sk.gt("ü"), lambda k: k.encode() > "ü".encode()),
        (Sk.ge("a b"), lambda k: k.encode() >= b"a b"),
    ],
    ids=[
        "eq",
        "begins_with",
        "begins_with_deep",
        "begins_with_cjk",
        "begins_with_hash",
        "between",
        "lt",
        "le",
        "gt",
        "ge",
    ],
)
async def test_every_sort_key_condition(
    table: Table, condition: SkCondition, expected: object
) -> None:
    await fill(table)
    want = utf8_order([k for k in SORT_KEYS if expected(k)])  # type: ignore[operator]
    assert want, "a condition that selects nothing proves little"
    assert sks(await table.query(PK, sk=condition)) == want
    assert sks(await table.query(PK, sk=condition, forward=False)) == list(reversed(want))


async def test_pages_cover_everything_once_in_both_directions(table: Table) -> None:
    await fill(table)
    for forward in (True, False):
        pages = await all_pages(table, PK, 4, forward=forward)
        assert len(pages) == 7  # 25 items: six full pages and one of one
        got = [sk for page in pages for sk in sks(page)]
        order = utf8_order(SORT_KEYS)
        assert got == (order if forward else list(reversed(order)))


async def test_a_cursor_is_given_exactly_when_more_follows(table: Table) -> None:
    keys = [f"Message#{i:03d}" for i in range(10)]
    await fill(table, keys=keys)
    first = await table.query(PK, limit=5)
    assert first.cursor is not None
    second = await table.query(PK, limit=5, cursor=first.cursor)
    assert sks(second) == keys[5:]
    assert second.cursor is None
    assert (await table.query(PK, limit=10)).cursor is None


async def test_pages_with_a_sort_key_condition(table: Table) -> None:
    keys = [f"Archival#{i:03d}" for i in range(12)] + [f"CoreMemory#{i}" for i in range(5)]
    await fill(table, keys=keys)
    pages = await all_pages(table, PK, 5, sk=Sk.begins_with("Archival#"), forward=False)
    assert [len(p.items) for p in pages] == [5, 5, 2]
    assert [sk for p in pages for sk in sks(p)] == list(reversed(keys[:12]))


async def test_expired_items_are_left_out_of_queries_and_pages(
    table: Table, clock: FrozenClock
) -> None:
    now = int(clock.now())
    items: list[dict[str, Any]] = [
        {"pk": PK, "sk": f"Message#{i:03d}", **({"ttl": now - 5} if i % 3 == 0 else {})}
        for i in range(15)
    ]
    items.append({"pk": PK, "sk": "Message#900", "ttl": now + 3600})
    await table.batch_write(puts=items)
    live = [i["sk"] for i in items if i.get("ttl", now + 1) > now]
    pages = await all_pages(table, PK, 3)
    assert [sk for p in pages for sk in sks(p)] == live
    assert all(len(p.items) == 3 for p in pages[:-1])
    clock.advance(7200)
    assert "Message#900" not in sks(await table.query(PK))


async def test_secondary_index_queries(table: Table) -> None:
    await table.batch_write(
        puts=[
            {
                "pk": f"CONVERSATION#{i}",
                "sk": "Meta",
                "gsi1pk": "Agent#a1",
                "gsi1sk": f"CONVERSATION#2024-01-{i:02d}",
                "i": i,
            }
            for i in range(1, 8)
        ]
        + [
            {
                "pk": "CONVERSATION#x",
                "sk": "Meta",
                "gsi1pk": "Agent#a2",
                "gsi1sk": "CONVERSATION#1",
            },
            {"pk": "CONVERSATION#y", "sk": "Meta"},  # not in the index
        ]
    )
    page = await table.query("Agent#a1", index="gsi1")
    assert [item["i"] for item in page.items] == list(range(1, 8))
    latest = await table.query("Agent#a1", index="gsi1", forward=False, limit=2)
    assert [item["i"] for item in latest.items] == [7, 6]
    rest = await table.query(
        "Agent#a1", index="gsi1", forward=False, limit=10, cursor=latest.cursor
    )
    assert [item["i"] for item in rest.items] == [5, 4, 3, 2, 1]
    assert rest.cursor is None
    ranged = await table.query(
        "Agent#a1",
        index="gsi1",
        sk=Sk.between("CONVERSATION#2024-01-03", "CONVERSATION#2024-01-05"),
    )
    assert [item["i"] for item in ranged.items] == [3, 4, 5]
