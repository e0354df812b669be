"""The five core-memory tools of seed 000, with its reply formats. The counts are real
(seed 000's example numbers are illustrative); the word limit follows the slash.

core_memory_read
    [human] Core Memory (4 lines, 13/5000 words):
    1: Name: John Smith
    ...                                           an empty block shows one line: (empty)
core_memory_append
    Appended to [human] at line 5: "Favorite color: Blue" (16/5000 words)
    Line already exists in [human] at line 3: "Occupation: Software Engineer" (no change)
core_memory_replace
    Replaced line 2 in [human]: "Lives in: London, UK" -> "Lives in: Paris" (12/5000 words)
    Line 2 in [human] is already "Lives in: Paris" (no change)
core_memory_delete
    Deleted line 2 from [human]: "Lives in: Paris" (lines below moved up; 3 lines,
    9/5000 words)                                                          (one line)
core_memory_list_blocks
    Core Memory Blocks (2):
    [human] Facts about the user (4 lines, 13/5000 words, 0%)
    [persona] Your traits and characteristics (0 lines, 0/5000 words, 0%)

From 80% of a block's limit, a blank line and this warning follow the reply of every tool
that touched the block (list_blocks: one per full block), as one line:
    Warning: [human] is at 85% capacity (4250/5000 words). Consolidate lines with
    core_memory_replace or core_memory_delete, or move details to archival memory with
    archival_memory_insert. If it stays this full, older lines will be moved to archival
    memory automatically.

Refusals are replies too, worded by the memory service (api/memory/errors.py):
    Block [projects] does not exist. Available blocks: human, persona.
    Line 7 does not exist in [human] (4 lines; use 1-4).
    Cannot append an empty line to [human] (no change).
    Invalid arguments for core_memory_delete: 'line_number' is required (a whole number).
"""

from api.llm.types import ToolSpec
from api.memory import service as memory_service
from api.memory.service import BlockView
from api.tools.native.base import Arguments, NativeTool, ToolContext, int_arg, schema, text_arg

BLOCK = {
    "type": "string",
    "description": 'The block\'s name, e.g. "human" (facts about the user) or "persona" '
    "(your traits).",
}
LINE_NUMBER = {
    "type": "integer",
    "minimum": 1,
    "description": "The line's number, as shown in core memory.",
}


def lines_count(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"


def words(block: BlockView) -> str:
    return f"{block.word_count}/{block.word_limit} words"


def fullness(block: BlockView) -> str:
    """The fuller of a block's limits: words, or characters for a block that has a
    character limit (seed 004's) and is fuller by it."""
    if block.char_limit is not None and block.chars_bind:
        return f"{block.char_count}/{block.char_limit} characters"
    return words(block)


def capacity_warning(block: BlockView) -> str:
    return (
        f"Warning: [{block.name}] is at {block.percent_used}% capacity ({fullness(block)}). "
        "Consolidate lines with core_memory_replace or core_memory_delete, or move details "
        "to archival memory with archival_memory_insert. If it stays this full, older lines "
        "will be moved to archival memory automatically."
    )


def with_warnings(reply: str, *touched: BlockView) -> str:
    warnings = [capacity_warning(b) for b in touched if b.needs_warning]
    return "\n\n".join([reply, *warnings])


# --- core_memory_read ------------------------------------------------------------------


def render_read(block: BlockView) -> str:
    heading = f"[{block.name}] Core Memory ({lines_count(len(block.lines))}, {words(block)}):"
    body = [f"{i}: {line}" for i, line in enumerate(block.lines, 1)] or ["(empty)"]
    return "\n".join([heading, *body])


async def core_memory_read(context: ToolContext, arguments: Arguments) -> str:
    block = await memory_service.read_block(
        context.repos, context.agent_id, text_arg(arguments, "block")
    )
    return with_warnings(render_read(block), block)


CORE_MEMORY_READ = NativeTool(
    ToolSpec(
        name="core_memory_read",
        description="Read a core memory block with its numbered lines. Core memory is also in "
        "your system prompt; read a block to be sure of line numbers before replacing or "
        "deleting a line.",
        parameters=schema({"block": BLOCK}, ["block"]),
    ),
    core_memory_read,
)


# --- core_memory_append ----------------------------------------------------------------


async def core_memory_append(context: ToolContext, arguments: Arguments) -> str:
    change = await memory_service.append_line(
        context.repos,
        context.agent_id,
        text_arg(arguments, "block"),
        text_arg(arguments, "content"),
        clock=context.clock,
        source=context.source,
        run_id=context.run_id,
    )
    block = change.block
    if change.changed:
        reply = (
            f'Appended to [{block.name}] at line {change.line_number}: "{change.line}" '
            f"({words(block)})"
        )
    else:
        reply = (
            f"Line already exists in [{block.name}] at line {change.line_number}: "
            f'"{change.line}" (no change)'
        )
    return with_warnings(reply, block)


CORE_MEMORY_APPEND = NativeTool(
    ToolSpec(
        name="core_memory_append",
        description="Add one fact as a new line at the end of a core memory block, e.g. "
        '"Name: Alice" to "human". Keep to one short fact per line. Appending a line that '
        "already exists changes nothing.",
        parameters=schema(
            {
                "block": BLOCK,
                "content": {"type": "string", "description": "The fact, as one line."},
            },
            ["block", "content"],
        ),
    ),
    core_memory_append,
    changes_core_memory=True,
)


# --- core_memory_replace ---------------------------------------------------------------


async def core_memory_replace(context: ToolContext, arguments: Arguments) -> str:
    change = await memory_service.replace_line(
        context.repos,
        context.agent_id,
        text_arg(arguments, "block"),
        int_arg(arguments, "line_number"),
        text_arg(arguments, "new_content"),
        clock=context.clock,
        source=context.source,
        run_id=context.run_id,
    )
    block = change.block
    if change.changed:
        reply = (
            f'Replaced line {change.line_number} in [{block.name}]: "{change.previous}" -> '
            f'"{change.line}" ({words(block)})'
        )
    else:
        reply = (
            f'Line {change.line_number} in [{block.name}] is already "{change.line}" (no change)'
        )
    return with_warnings(reply, block)


CORE_MEMORY_REPLACE = NativeTool(
    ToolSpec(
        name="core_memory_replace",
        description="Replace one line of a core memory block, by its line number, with new "
        "content: for a fact that changed, or to merge related lines into one.",
        parameters=schema(
            {
                "block": BLOCK,
                "line_number": LINE_NUMBER,
                "new_content": {"type": "string", "description": "The line's new text."},
            },
            ["block", "line_number", "new_content"],
        ),
    ),
    core_memory_replace,
    changes_core_memory=True,
)


# --- core_memory_delete ----------------------------------------------------------------


async def core_memory_delete(context: ToolContext, arguments: Arguments) -> str:
    change = await memory_service.delete_line(
        context.repos,
        context.agent_id,
        text_arg(arguments, "block"),
        int_arg(arguments, "line_number"),
        clock=context.clock,
        source=context.source,
        run_id=context.run_id,
    )
    block = change.block
    reply = (
        f'Deleted line {change.line_number} from [{block.name}]: "{change.line}" (lines below '
        f"moved up; {lines_count(len(block.lines))}, {words(block)})"
    )
    return with_warnings(reply, block)


CORE_MEMORY_DELETE = NativeTool(
    ToolSpec(
        name="core_memory_delete",
        description="Delete one line of a core memory block by its line number. The lines "
        "below it move up by one, so check the numbers again before another delete.",
        parameters=schema({"block": BLOCK, "line_number": LINE_NUMBER}, ["block", "line_number"]),
    ),
    core_memory_delete,
    changes_core_memory=True,
)


# --- core_memory_list_blocks -----------------------------------------------------------


def render_list(blocks: list[BlockView]) -> str:
    rows = [
        f"[{b.name}]{' ' + b.description if b.description else ''} "
        f"({lines_count(len(b.lines))}, {words(b)}, {b.percent_used}%)"
        for b in blocks
    ]
    return "\n".join([f"Core Memory Blocks ({len(blocks)}):", *(rows or ["(none)"])])


async def core_memory_list_blocks(context: ToolContext, arguments: Arguments) -> str:
    blocks = await memory_service.list_blocks(context.repos, context.agent_id)
    return with_warnings(render_list(blocks), *blocks)


CORE_MEMORY_LIST_BLOCKS = NativeTool(
    ToolSpec(
        name="core_memory_list_blocks",
        description="List the core memory blocks with their descriptions and how full each one is.",
        parameters=schema({}, []),
    ),
    core_memory_list_blocks,
)
