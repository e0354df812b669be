"""The core-memory tools' replies, character for character as seed 000 gives them."""

from typing import Any

from api.llm.types import ToolCall
from api.memory import service as memory_service
from api.runtime.toolbox import Toolbox
from api.tools.native import NATIVE_MEMORY_TOOLS, ToolContext
from tests.memory.helpers import call

JOHN = [
    "Name: John Smith",
    "Lives in: London, UK",
    "Occupation: Software Engineer",
    "Likes: Coffee, hiking",
]


async def johns_memory(ctx: ToolContext) -> None:
    for line in JOHN:
        await call(ctx, "core_memory_append", block="human", content=line)


async def test_read_shows_numbered_lines_and_real_counts(ctx: ToolContext) -> None:
    await johns_memory(ctx)
    assert await call(ctx, "core_memory_read", block="human") == (
        "[human] Core Memory (4 lines, 13/5000 words):\n"
        "1: Name: John Smith\n"
        "2: Lives in: London, UK\n"
        "3: Occupation: Software Engineer\n"
        "4: Likes: Coffee, hiking"
    )


async def test_read_an_empty_block(ctx: ToolContext) -> None:
    assert await call(ctx, "core_memory_read", block="persona") == (
        "[persona] Core Memory (0 lines, 0/5000 words):\n(empty)"
    )


async def test_append_new_and_duplicate(ctx: ToolContext) -> None:
    await johns_memory(ctx)
    assert await call(ctx, "core_memory_append", block="human", content="Favorite color: Blue") == (
        'Appended to [human] at line 5: "Favorite color: Blue" (16/5000 words)'
    )
    duplicate = await call(
        ctx, "core_memory_append", block="human", content="Occupation: Software Engineer"
    )
    assert duplicate == (
        'Line already exists in [human] at line 3: "Occupation: Software Engineer" (no change)'
    )
    assert len((await memory_service.read_block(ctx.repos, ctx.agent_id, "human")).lines) == 5


async def test_alice_as_in_the_seed(ctx: ToolContext) -> None:
    first = await call(ctx, "core_memory_append", block="human", content="Name: Alice")
    second = await call(ctx, "core_memory_append", block="human", content="Works at: Google")
    assert first == 'Appended to [human] at line 1: "Name: Alice" (2/5000 words)'
    assert second == 'Appended to [human] at line 2: "Works at: Google" (5/5000 words)'


async def test_block_names_from_the_prompt_heading_work(ctx: ToolContext) -> None:
    reply = await call(
        ctx, "core_memory_append", block="Human - Facts about the user", content="Name: Alice"
    )
    assert reply == 'Appended to [human] at line 1: "Name: Alice" (2/5000 words)'


async def test_replace(ctx: ToolContext) -> None:
    await johns_memory(ctx)
    reply = await call(
        ctx, "core_memory_replace", block="human", line_number=2, new_content="Lives in: Paris"
    )
    assert reply == (
        'Replaced line 2 in [human]: "Lives in: London, UK" -> "Lives in: Paris" (12/5000 words)'
    )
    same = await call(
        ctx, "core_memory_replace", block="human", line_number=2, new_content="Lives in: Paris"
    )
    assert same == 'Line 2 in [human] is already "Lives in: Paris" (no change)'
    clash = await call(
        ctx, "core_memory_replace", block="human", line_number=2, new_content="Name: John Smith"
    )
    assert clash == 'Line already exists in [human] at line 1: "Name: John Smith" (no change)'


async def test_delete_moves_the_lines_below_up(ctx: ToolContext) -> None:
    await johns_memory(ctx)
    reply = await call(ctx, "core_memory_delete", block="human", line_number=2)
    assert reply == (
        'Deleted line 2 from [human]: "Lives in: London, UK" '
        "(lines below moved up; 3 lines, 9/5000 words)"
    )
    assert await call(ctx, "core_memory_read", block="human") == (
        "[human] Core Memory (3 lines, 9/5000 words):\n"
        "1: Name: John Smith\n"
        "2: Occupation: Software Engineer\n"
        "3: Likes: Coffee, hiking"
    )


async def test_list_blocks_with_capacity(ctx: ToolContext) -> None:
    await johns_memory(ctx)
    await memory_service.create_block(
        ctx.repos, ctx.agent_id, "Projects", description="Work in progress", word_limit=200
    )
    assert await call(ctx, "core_memory_list_blocks") == (
        "Core Memory Blocks (3):\n"
        "[human] Facts about the user (4 lines, 13/5000 words, 0%)\n"
        "[persona] Your traits and characteristics (0 lines, 0/5000 words, 0%)\n"
        "[projects] Work in progress (0 lines, 0/200 words, 0%)"
    )


# --- refusals are replies ----------------------------------------------------------------


async def test_unknown_block(ctx: ToolContext) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("core_memory_read", {}),
        ("core_memory_append", {"content": "x"}),
        ("core_memory_replace", {"line_number": 1, "new_content": "x"}),
        ("core_memory_delete", {"line_number": 1}),
    ]
    for tool, arguments in calls:
        reply = await call(ctx, tool, block="Projects", **arguments)
        assert reply == "Block [projects] does not exist. Available blocks: human, persona."


async def test_bad_line_numbers(ctx: ToolContext) -> None:
    assert await call(ctx, "core_memory_delete", block="human", line_number=1) == (
        "Line 1 does not exist in [human] (the block is empty)."
    )
    await johns_memory(ctx)
    for number in (0, 5, -1):
        assert await call(ctx, "core_memory_delete", block="human", line_number=number) == (
            f"Line {number} does not exist in [human] (4 lines; use 1-4)."
        )
    reply = await call(ctx, "core_memory_replace", block="human", line_number=7, new_content="x")
    assert reply == "Line 7 does not exist in [human] (4 lines; use 1-4)."
    await call(ctx, "core_memory_delete", block="human", line_number=4)
    await call(ctx, "core_memory_delete", block="human", line_number=3)
    await call(ctx, "core_memory_delete", block="human", line_number=2)
    assert await call(ctx, "core_memory_delete", block="human", line_number=2) == (
        "Line 2 does not exist in [human] (1 line; use 1-1)."
    )


async def test_empty_content(ctx: ToolContext) -> None:
    assert await call(ctx, "core_memory_append", block="human", content="   \n ") == (
        "Cannot append an empty line to [human] (no change)."
    )
    await johns_memory(ctx)
    assert await call(ctx, "core_memory_replace", block="human", line_number=1, new_content="") == (
        "Cannot replace line 1 of [human] with empty content; delete the line instead (no change)."
    )


async def test_invalid_arguments(ctx: ToolContext) -> None:
    assert await call(ctx, "core_memory_delete", block="human") == (
        "Invalid arguments for core_memory_delete: 'line_number' is required (a whole number)."
    )
    assert await call(ctx, "core_memory_append", block="human") == (
        "Invalid arguments for core_memory_append: 'content' is required (a string)."
    )
    assert await call(ctx, "core_memory_read", block=3) == (
        "Invalid arguments for core_memory_read: 'block' must be a string."
    )
    assert await call(ctx, "core_memory_read", block="!!!") == (
        '"!!!" is not a valid block name: use letters, digits and underscores, '
        "e.g. human, persona or projects."
    )


async def test_line_numbers_sent_as_text_are_understood(ctx: ToolContext) -> None:
    await johns_memory(ctx)
    reply = await call(ctx, "core_memory_delete", block="human", line_number="4")
    assert reply.startswith('Deleted line 4 from [human]: "Likes: Coffee, hiking"')


# --- capacity ----------------------------------------------------------------------------


async def test_warning_from_80_percent(ctx: ToolContext) -> None:
    await memory_service.create_block(ctx.repos, ctx.agent_id, "notes", word_limit=10)
    seven = await call(
        ctx, "core_memory_append", block="notes", content="one two three four five six seven"
    )
    assert (
        seven == 'Appended to [notes] at line 1: "one two three four five six seven" (7/10 words)'
    )
    warning = (
        "Warning: [notes] is at 80% capacity (8/10 words). Consolidate lines with "
        "core_memory_replace or core_memory_delete, or move details to archival memory with "
        "archival_memory_insert. If it stays this full, older lines will be moved to archival "
        "memory automatically."
    )
    eight = await call(ctx, "core_memory_append", block="notes", content="eight")
    assert eight == f'Appended to [notes] at line 2: "eight" (8/10 words)\n\n{warning}'
    read = await call(ctx, "core_memory_read", block="notes")
    assert read.endswith(f"2: eight\n\n{warning}")
    listing = await call(ctx, "core_memory_list_blocks")
    assert listing.endswith(f"[notes] (2 lines, 8/10 words, 80%)\n\n{warning}")


async def test_a_block_never_grows_past_its_limit(ctx: ToolContext) -> None:
    await memory_service.create_block(ctx.repos, ctx.agent_id, "notes", word_limit=5)
    await call(ctx, "core_memory_append", block="notes", content="one two three four")
    reply = await call(ctx, "core_memory_append", block="notes", content="five six")
    assert reply.startswith(
        "Cannot append to [notes]: it would hold 6/5 words. Consolidate lines or move details "
        "to archival memory first (no change)."
    )


def test_specs_name_the_seven_tools_with_schemas() -> None:
    specs = {name: tool.spec for name, tool in NATIVE_MEMORY_TOOLS.items()}
    assert list(specs) == [
        "core_memory_read",
        "core_memory_append",
        "core_memory_replace",
        "core_memory_delete",
        "core_memory_list_blocks",
        "archival_memory_insert",
        "archival_memory_search",
    ]
    required = {name: spec.parameters["required"] for name, spec in specs.items()}
    assert required == {
        "core_memory_read": ["block"],
        "core_memory_append": ["block", "content"],
        "core_memory_replace": ["block", "line_number", "new_content"],
        "core_memory_delete": ["block", "line_number"],
        "core_memory_list_blocks": [],
        "archival_memory_insert": ["content"],
        "archival_memory_search": ["query"],
    }
    assert all(spec.description for spec in specs.values())


async def test_a_tool_the_model_made_up_gets_a_reply(ctx: ToolContext) -> None:
    tools = Toolbox(ctx, list(NATIVE_MEMORY_TOOLS.values()))
    call_ = ToolCall(id="call_1", name="core_memory_forget", arguments={})
    assert await tools.run(call_) == (
        "There is no tool 'core_memory_forget'. Available tools: core_memory_read, "
        "core_memory_append, core_memory_replace, core_memory_delete, core_memory_list_blocks, "
        "archival_memory_insert, archival_memory_search."
    )
    real = ToolCall(
        id="call_2",
        name="core_memory_append",
        arguments={"block": "human", "content": "Name: Alice"},
    )
    assert await tools.run(real) == ('Appended to [human] at line 1: "Name: Alice" (2/5000 words)')


async def test_odd_numbers_from_a_model_get_a_reply_not_an_error(ctx: ToolContext) -> None:
    for odd in ("--1", "²", "1.5", "one"):
        reply = await call(ctx, "core_memory_delete", block="human", line_number=odd)
        assert reply.startswith("Invalid arguments for core_memory_delete"), reply
    page = await call(ctx, "archival_memory_search", query="coffee", page="--2")
    assert page.startswith("Invalid arguments"), page
