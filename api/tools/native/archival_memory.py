"""The two archival-memory tools of seed 000, with its reply formats.

archival_memory_search
    Archival Memory Search for "coffee" (Page 1 of 3, 12 total):

    [1] (2024-01-15) John drinks 3 cups of coffee daily, prefers dark roast...
    ...
    [5] (2024-01-02) Doesn't like sugar in coffee...

    (Use page=2 for more)                              only when a next page exists
  nothing matches, and a page past the end:
    Archival Memory Search for "tea": no memories match.
    Archival Memory Search for "coffee": page 4 does not exist (3 pages, 12 total).
archival_memory_insert
    Inserted into archival memory (2024-01-15): "Uses V60 brewing method..."
    Already in archival memory (2024-01-15): "Uses V60 brewing method..." (no change)
  and after an insert, a line for each memory it replaced (the same fact, another value):
    Replaced: 'Lives in: Lisbon' (2025-03-02) → 'Lives in: Porto'

A replaced memory is found only by questions about the past ("where did I live before?",
"in 2024"), labelled "(until 2025-06-01)" after its preview.

Dates are when the memory became true: its creation date (UTC) unless its writer gave one.
Results are numbered across pages ([6] opens
page 2). Each shows a preview: the memory's first sentence, at most PREVIEW_CHARS (80)
characters cut at a word, and "..." when anything was left out. Refusals (empty content or
query, a page below 1) are replies, worded by the memory service.
"""

import re

from api.llm.types import ToolSpec
from api.memory import archival, validity
from api.memory.archival import SearchPage
from api.memory.models import ArchivalMemory
from api.tools.native.base import (
    Arguments,
    NativeTool,
    ToolContext,
    int_arg,
    schema,
    searched_sources,
    text_arg,
)

PREVIEW_CHARS = 80
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def preview(content: str) -> str:
    text = " ".join(content.split())
    shown = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(shown) > PREVIEW_CHARS:
        # Up to the last space within the limit, so no word is cut in half.
        shown = shown[: PREVIEW_CHARS + 1].rsplit(" ", 1)[0][:PREVIEW_CHARS]
    if shown == text:
        return text
    return shown.rstrip(" .,;:") + "..."


def day(memory: ArchivalMemory) -> str:
    """When it became true: its creation, unless its writer gave a date."""
    return memory.valid_since.strftime("%Y-%m-%d")


# --- archival_memory_insert ------------------------------------------------------------


async def archival_memory_insert(context: ToolContext, arguments: Arguments) -> str:
    result = await archival.insert(
        context.repos,
        context.search,
        context.agent_id,
        text_arg(arguments, "content"),
        automatic=context.auto_supersede,
    )
    memory = result.memory
    if not result.created:
        return (
            f'Already in archival memory ({day(memory)}): "{preview(memory.content)}" (no change)'
        )
    inserted = f'Inserted into archival memory ({day(memory)}): "{preview(memory.content)}"'
    return "\n".join([inserted, *validity.replacement_lines(result)])


ARCHIVAL_MEMORY_INSERT = NativeTool(
    ToolSpec(
        name="archival_memory_insert",
        description="Store detailed information in archival memory: unlimited, kept for good, "
        "and found again with archival_memory_search. Use it for details too long or too "
        "rarely needed for core memory. Storing the same text twice keeps one copy.",
        parameters=schema(
            {"content": {"type": "string", "description": "The text to store."}}, ["content"]
        ),
    ),
    archival_memory_insert,
)


# --- archival_memory_search ------------------------------------------------------------

ARCHIVAL_MEMORY_SEARCH_NAME = "archival_memory_search"


def render_search(result: SearchPage) -> str:
    title = f'Archival Memory Search for "{result.query}"'
    if result.total == 0:
        return f"{title}: no memories match."
    if not result.memories:
        return (
            f"{title}: page {result.page} does not exist "
            f"({result.pages} {'page' if result.pages == 1 else 'pages'}, {result.total} total)."
        )
    rows = [
        f"[{rank}] ({day(m)}) {preview(m.content)}{validity.until(m)}"
        for rank, m in enumerate(result.memories, result.first_rank)
    ]
    parts = [
        f"{title} (Page {result.page} of {result.pages}, {result.total} total):",
        "\n".join(rows),
    ]
    if result.has_next:
        parts.append(f"(Use page={result.page + 1} for more)")
    return "\n\n".join(parts)


async def archival_memory_search(context: ToolContext, arguments: Arguments) -> str:
    result = await archival.search(
        context.search,
        context.agent_id,
        text_arg(arguments, "query"),
        page=int_arg(arguments, "page", default=1),
    )
    context.note(searched_sources(ARCHIVAL_MEMORY_SEARCH_NAME, result.matches))
    return render_search(result)


ARCHIVAL_MEMORY_SEARCH = NativeTool(
    ToolSpec(
        name=ARCHIVAL_MEMORY_SEARCH_NAME,
        description="Search archival memory. Results come 5 per page, best matches first "
        "and newest first among equals; ask for the next page with `page`.",
        parameters=schema(
            {
                "query": {"type": "string", "description": "Words to look for."},
                "page": {
                    "type": "integer",
                    "minimum": 1,
                    "default": 1,
                    "description": "Which page of results, from 1.",
                },
            },
            ["query"],
        ),
    ),
    archival_memory_search,
)
