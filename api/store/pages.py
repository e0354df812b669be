"""A whole query (or scan) read a page at a time: the one loop over cursors that every
repository uses, so that none forgets a page or holds a cursor past its end."""

from collections.abc import AsyncIterator

from api.store.table import Item, SkCondition, Table


async def pages(
    table: Table,
    pk: str,
    *,
    sk: SkCondition | None = None,
    index: str | None = None,
    forward: bool = True,
    limit: int | None = None,
) -> AsyncIterator[list[Item]]:
    """The query's items, one page (of at most `limit`) at a time, until the last."""
    cursor: str | None = None
    while True:
        page = await table.query(
            pk, sk=sk, index=index, forward=forward, limit=limit, cursor=cursor
        )
        yield page.items
        cursor = page.cursor
        if cursor is None:
            return


async def query_all(
    table: Table,
    pk: str,
    *,
    sk: SkCondition | None = None,
    index: str | None = None,
    forward: bool = True,
    limit: int | None = None,
) -> list[Item]:
    """Every item of the query, for partitions known to stay small."""
    return [
        item
        async for page in pages(table, pk, sk=sk, index=index, forward=forward, limit=limit)
        for item in page
    ]


async def scan_pages(
    table: Table, *, entity: str | None = None, limit: int | None = None
) -> AsyncIterator[list[Item]]:
    """The whole table (or one entity of it), a page at a time: admin tasks only."""
    cursor: str | None = None
    while True:
        page = await table.scan(entity=entity, limit=limit, cursor=cursor)
        yield page.items
        cursor = page.cursor
        if cursor is None:
            return
