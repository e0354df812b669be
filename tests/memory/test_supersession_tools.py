"""The model's tools and facts that change: an insert that replaces a memory keeps seed 000's
and seed 003's reply and adds a line saying so; a replaced memory is found by questions
about the past, labelled with when it stopped being true; an agent can turn it off."""

import dataclasses

from api.kit.clock import FrozenClock
from api.tools.native import ToolContext
from tests.memory.helpers import at, call


async def test_archival_tools_say_what_was_replaced(ctx: ToolContext, clock: FrozenClock) -> None:
    at(clock, "2025-03-02")
    first = await call(ctx, "archival_memory_insert", content="Lives in: Lisbon")
    assert first == 'Inserted into archival memory (2025-03-02): "Lives in: Lisbon"'
    at(clock, "2025-06-01")
    second = await call(ctx, "archival_memory_insert", content="Lives in: Porto")
    assert second == (
        'Inserted into archival memory (2025-06-01): "Lives in: Porto"\n'
        "Replaced: 'Lives in: Lisbon' (2025-03-02) → 'Lives in: Porto'"
    )
    now = await call(ctx, "archival_memory_search", query="where do I live")
    assert "Lives in: Porto" in now
    assert "Lisbon" not in now
    before = await call(ctx, "archival_memory_search", query="where did I live before")
    assert "[1] (2025-03-02) Lives in: Lisbon (until 2025-06-01)" in before
    assert "[2] (2025-06-01) Lives in: Porto\n" in before + "\n"


async def test_categorized_tools_say_what_was_replaced(
    ctx: ToolContext, clock: FrozenClock
) -> None:
    at(clock, "2025-01-10")
    await call(ctx, "store_memory", category="fact", content="Employer: Acme")
    at(clock, "2025-04-01")
    stored = await call(ctx, "store_memory", category="fact", content="Employer: Globex")
    assert stored == (
        "Stored fact memory: Employer: Globex\n"
        "Replaced: 'Employer: Acme' (2025-01-10) → 'Employer: Globex'"
    )
    # Another category states another fact: nothing replaced.
    other = await call(ctx, "store_memory", category="preference", content="Employer: Initech")
    assert other == "Stored preference memory: Employer: Initech"
    found = await call(ctx, "search_memories", query="employer before")
    assert "- [fact] Employer: Acme (until 2025-04-01)" in found
    listed = await call(ctx, "list_memories", category="fact")
    assert "Acme" not in listed  # the current facts


async def test_an_agent_can_keep_every_value(ctx: ToolContext, clock: FrozenClock) -> None:
    keeping = dataclasses.replace(ctx, auto_supersede=False)
    at(clock, "2025-03-02")
    await call(keeping, "archival_memory_insert", content="Lives in: Lisbon")
    at(clock, "2025-06-01")
    second = await call(keeping, "archival_memory_insert", content="Lives in: Porto")
    assert second == 'Inserted into archival memory (2025-06-01): "Lives in: Porto"'
    both = await call(keeping, "archival_memory_search", query="lives")
    assert "Lisbon" in both
    assert "Porto" in both
