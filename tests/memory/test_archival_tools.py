"""The archival tools' replies, and search with its pages, as seed 000 gives them."""

from api.kit.clock import FrozenClock
from api.memory import archival
from api.tools.native import ToolContext
from api.tools.native.archival_memory import preview
from tests.memory.helpers import at, call

# Twelve memories about coffee (the first five are seed 000's page 1) and two that are not.
COFFEE = [
    ("2024-01-15", "John drinks 3 cups of coffee daily, prefers dark roast. Beans from Kenya."),
    ("2024-01-10", "Favorite coffee shops: Monmouth, Prufrock. Both in London."),
    ("2024-01-08", "Morning routine includes coffee at 7am. Then a run along the canal."),
    ("2024-01-05", "Uses V60 brewing method. Grinds the coffee beans just before brewing."),
    ("2024-01-02", "Doesn't like sugar in coffee. Takes a little oat milk."),
    ("2023-12-28", "Bought a new coffee grinder for Christmas."),
    ("2023-12-20", "Coffee tasting event at the office."),
    ("2023-12-15", "Tried decaf coffee, did not like it."),
    ("2023-12-10", "Wants to visit coffee farms in Colombia."),
    ("2023-12-05", "Coffee budget is about 40 pounds a month."),
    ("2023-12-01", "Switched from instant coffee to filter."),
    ("2023-11-25", "Reads about coffee chemistry."),
]
OTHER = [
    ("2024-01-20", "Prefers green tea in the afternoon."),
    ("2023-11-01", "Plays tennis on Sundays."),
]


async def remember(ctx: ToolContext, clock: FrozenClock, memories: list[tuple[str, str]]) -> None:
    for day, text in memories:
        at(clock, day)
        await archival.insert(ctx.repos, ctx.search, ctx.agent_id, text)


async def test_search_page_1_as_in_the_seed(ctx: ToolContext, clock: FrozenClock) -> None:
    await remember(ctx, clock, COFFEE + OTHER)
    assert await call(ctx, "archival_memory_search", query="coffee") == (
        'Archival Memory Search for "coffee" (Page 1 of 3, 12 total):\n'
        "\n"
        "[1] (2024-01-15) John drinks 3 cups of coffee daily, prefers dark roast...\n"
        "[2] (2024-01-10) Favorite coffee shops: Monmouth, Prufrock...\n"
        "[3] (2024-01-08) Morning routine includes coffee at 7am...\n"
        "[4] (2024-01-05) Uses V60 brewing method...\n"
        "[5] (2024-01-02) Doesn't like sugar in coffee...\n"
        "\n"
        "(Use page=2 for more)"
    )


async def test_later_pages_number_on_and_the_last_has_no_footer(
    ctx: ToolContext, clock: FrozenClock
) -> None:
    await remember(ctx, clock, COFFEE + OTHER)
    page_2 = await call(ctx, "archival_memory_search", query="coffee", page=2)
    assert page_2.startswith('Archival Memory Search for "coffee" (Page 2 of 3, 12 total):\n\n[6]')
    assert page_2.endswith("(Use page=3 for more)")
    assert await call(ctx, "archival_memory_search", query="Coffee", page=3) == (
        'Archival Memory Search for "Coffee" (Page 3 of 3, 12 total):\n'
        "\n"
        "[11] (2023-12-01) Switched from instant coffee to filter.\n"
        "[12] (2023-11-25) Reads about coffee chemistry."
    )


async def test_more_query_terms_matched_rank_first(ctx: ToolContext, clock: FrozenClock) -> None:
    await remember(ctx, clock, COFFEE + OTHER)
    reply = await call(ctx, "archival_memory_search", query="what coffee grinder did he buy")
    assert reply.splitlines()[2] == ("[1] (2023-12-28) Bought a new coffee grinder for Christmas.")


async def test_a_page_past_the_end(ctx: ToolContext, clock: FrozenClock) -> None:
    await remember(ctx, clock, COFFEE)
    assert await call(ctx, "archival_memory_search", query="coffee", page=4) == (
        'Archival Memory Search for "coffee": page 4 does not exist (3 pages, 12 total).'
    )
    assert await call(ctx, "archival_memory_search", query="coffee", page=0) == (
        "Page must be 1 or more, not 0."
    )


async def test_nothing_matches(ctx: ToolContext, clock: FrozenClock) -> None:
    await remember(ctx, clock, COFFEE)
    assert await call(ctx, "archival_memory_search", query="sailing") == (
        'Archival Memory Search for "sailing": no memories match.'
    )
    assert await call(ctx, "archival_memory_search", query="  ") == (
        "Search query is empty; give words to search for."
    )


async def test_insert_and_insert_again(ctx: ToolContext, clock: FrozenClock) -> None:
    at(clock, "2024-01-05")
    text = "Uses V60 brewing method. Grinds the coffee beans just before brewing."
    assert await call(ctx, "archival_memory_insert", content=text) == (
        'Inserted into archival memory (2024-01-05): "Uses V60 brewing method..."'
    )
    at(clock, "2024-02-01")
    assert await call(ctx, "archival_memory_insert", content=f"  {text}\n") == (
        'Already in archival memory (2024-01-05): "Uses V60 brewing method..." (no change)'
    )
    memories, _ = await archival.list_memories(ctx.repos, ctx.agent_id)
    assert [m.content for m in memories] == [text]


async def test_insert_refusals(ctx: ToolContext) -> None:
    assert await call(ctx, "archival_memory_insert", content=" ") == (
        "Cannot insert empty content into archival memory (no change)."
    )
    assert await call(ctx, "archival_memory_insert") == (
        "Invalid arguments for archival_memory_insert: 'content' is required (a string)."
    )


def test_previews() -> None:
    assert preview("Short and whole.") == "Short and whole."
    assert preview("First sentence. Second one.") == "First sentence..."
    long = "word " * 30
    shown = preview(long)
    assert shown == ("word " * 16).strip() + "..."
    assert len(shown) <= 80 + 3
    assert preview("x" * 100) == "x" * 80 + "..."
    assert preview("Line one\nline two") == "Line one line two"
