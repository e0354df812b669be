"""Scans every engine answers alike: each live item once across pages, the entity filter,
expiry, and cursors that continue only their own scan."""

import base64
import json
from typing import Any

import pytest

from api.kit.clock import FrozenClock
from api.store.table import InvalidCursor, InvalidItem, Item, Key, Page, Table

ARCHIVAL = "ArchivalMemory"
CORE = "CoreMemory"
MAX_PAGES = 200  # a scan that goes on longer than this is not ending


def catalogue(now: int) -> list[Item]:
    """Items of several entities spread over several partitions, some of them expired."""
    items: list[Item] = []
    for a in range(4):
        agent = f"Agent#a{a}"
        items += [
            {"pk": agent, "sk": f"Archival#{i:03d}", "entity": ARCHIVAL, "text": f"{a}-{i}"}
            for i in range(5)
        ]
        items += [
            {"pk": agent, "sk": f"CoreMemory#{block}", "entity": CORE, "lines": [block]}
            for block in ("human", "persona")
        ]
        items.append(
            {"pk": agent, "sk": "Archival#900", "entity": ARCHIVAL, "ttl": now - 5}  # expired
        )
    items += [
        {"pk": f"User#{u}@example.com", "sk": "User#Metadata", "entity": "User", "n": u}
        for u in range(3)
    ]
    items += [
        {"pk": "Agent#a9", "sk": "Archival#001", "entity": ARCHIVAL, "ttl": now + 3600},
        {"pk": "Agent#a9", "sk": "Archival#002", "entity": f"{ARCHIVAL}X"},  # not equal
        {"pk": "Agent#a9", "sk": "Archival#003", "entity": 1},  # a number, not "1"
        {"pk": "Agent#a9", "sk": "Archival#004"},  # no entity at all
        {"pk": "Lonely", "sk": "expired", "entity": CORE, "ttl": now},  # at now: expired
    ]
    return items


@pytest.fixture
async def stored(table: Table, clock: FrozenClock) -> list[Item]:
    items = catalogue(int(clock.now()))
    await table.batch_write(puts=items)
    return items


def live(items: list[Item], now: float, entity: str | None = None) -> list[Item]:
    return [
        i
        for i in items
        if (not isinstance(i.get("ttl"), int) or i["ttl"] > now)
        and (entity is None or i.get("entity") == entity)
    ]


def by_key(items: list[Item]) -> list[Item]:
    return sorted(items, key=lambda i: (i["pk"], i["sk"]))


async def all_pages(table: Table, cursor: str | None = None, **kwargs: Any) -> list[Page]:
    """The pages of a scan from `cursor` (its start when None) to its end."""
    pages = []
    for _ in range(MAX_PAGES):
        page = await table.scan(cursor=cursor, **kwargs)
        pages.append(page)
        if page.cursor is None:
            return pages
        cursor = page.cursor
    raise AssertionError(f"the scan did not end within {MAX_PAGES} pages")


def keys(pages: list[Page]) -> list[Key]:
    return [Key(i["pk"], i["sk"]) for page in pages for i in page.items]


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 100, None])
async def test_pages_cover_every_live_item_once(
    table: Table, stored: list[Item], clock: FrozenClock, limit: int | None
) -> None:
    pages = await all_pages(table, limit=limit)
    got = [item for page in pages for item in page.items]
    assert len(set(keys(pages))) == len(got), "no item comes back twice"
    assert by_key(got) == by_key(live(stored, clock.now()))
    if limit is not None:
        assert all(len(page.items) <= limit for page in pages)
    if limit is None or limit >= len(stored):
        assert len(pages) == 1  # nothing follows the first page: no cursor


@pytest.mark.parametrize("limit", [1, 3, 100, None])
@pytest.mark.parametrize("entity", [ARCHIVAL, CORE, "User"])
async def test_a_scan_of_one_entity_holds_only_its_items(
    table: Table, stored: list[Item], clock: FrozenClock, entity: str, limit: int | None
) -> None:
    pages = await all_pages(table, entity=entity, limit=limit)
    got = [item for page in pages for item in page.items]
    assert len(set(keys(pages))) == len(got)
    assert by_key(got) == by_key(live(stored, clock.now(), entity))
    if limit is not None:
        assert all(len(page.items) <= limit for page in pages)


async def test_an_entity_nobody_has_scans_to_nothing(table: Table, stored: list[Item]) -> None:
    assert keys(await all_pages(table, entity="1", limit=5)) == []  # `1` is a number
    assert keys(await all_pages(table, entity="Nobody")) == []


async def test_an_empty_table_is_one_empty_page(table: Table) -> None:
    assert await table.scan() == Page([], None)
    assert await table.scan(limit=3) == Page([], None)


async def test_expired_items_are_left_out(
    table: Table, stored: list[Item], clock: FrozenClock
) -> None:
    found = set(keys(await all_pages(table, limit=4)))
    assert Key("Agent#a0", "Archival#900") not in found
    assert Key("Lonely", "expired") not in found
    assert Key("Agent#a9", "Archival#001") in found
    clock.advance(7200)
    later = set(keys(await all_pages(table, entity=ARCHIVAL, limit=4)))
    assert Key("Agent#a9", "Archival#001") not in later
    assert len(later) == 4 * 5


async def test_a_scan_goes_on_after_its_cursor_item_is_deleted(
    table: Table, stored: list[Item], clock: FrozenClock
) -> None:
    first = await table.scan(limit=3)
    assert first.cursor is not None
    seen = [Key(i["pk"], i["sk"]) for i in first.items]
    for key in seen:
        await table.delete(key)
    rest = keys(await all_pages(table, limit=3, cursor=first.cursor))
    expected = {Key(i["pk"], i["sk"]) for i in live(stored, clock.now())} - set(seen)
    assert sorted(rest) == sorted(expected)


async def test_items_written_behind_the_cursor_are_not_seen_again(
    table: Table, stored: list[Item]
) -> None:
    first = await table.scan(limit=5)
    assert first.cursor is not None
    for item in first.items:
        await table.put({**item, "touched": True})
    rest = keys(await all_pages(table, limit=5, cursor=first.cursor))
    assert not set(rest) & {Key(i["pk"], i["sk"]) for i in first.items}


def encode(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


@pytest.mark.parametrize(
    "cursor",
    [
        "not a cursor!",
        "%%%",
        encode(["pk", "sk"]),
        encode({"pk": "Agent#a1", "sk": "Archival#001"}),
        encode({"at": {"pk": "Agent#a1", "sk": "Archival#001"}, "q": "0" * 12}),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
async def test_a_malformed_cursor_is_refused(table: Table, stored: list[Item], cursor: str) -> None:
    with pytest.raises(InvalidCursor):
        await table.scan(limit=2, cursor=cursor)


async def test_a_cursor_continues_only_its_own_scan(table: Table, stored: list[Item]) -> None:
    query_page = await table.query("Agent#a1", limit=2)
    assert query_page.cursor is not None
    with pytest.raises(InvalidCursor):
        await table.scan(limit=2, cursor=query_page.cursor)

    scan_page = await table.scan(limit=2)
    assert scan_page.cursor is not None
    with pytest.raises(InvalidCursor):
        await table.scan(entity=ARCHIVAL, limit=2, cursor=scan_page.cursor)
    with pytest.raises(InvalidCursor):
        await table.query(scan_page.items[-1]["pk"], limit=2, cursor=scan_page.cursor)

    archival_page = await table.scan(entity=ARCHIVAL, limit=2)
    assert archival_page.cursor is not None
    with pytest.raises(InvalidCursor):
        await table.scan(limit=2, cursor=archival_page.cursor)
    with pytest.raises(InvalidCursor):
        await table.scan(entity=CORE, limit=2, cursor=archival_page.cursor)


@pytest.mark.parametrize("limit", [0, -1, True])
async def test_a_limit_below_one_is_refused(table: Table, stored: list[Item], limit: int) -> None:
    with pytest.raises(InvalidItem):
        await table.scan(limit=limit)
    with pytest.raises(InvalidItem):
        await table.query("Agent#a1", limit=limit)


async def test_an_empty_entity_is_refused(table: Table, stored: list[Item]) -> None:
    with pytest.raises(InvalidItem):
        await table.scan(entity="")
