"""Seed 003's three memory tools, with its names, descriptions, JSON schemas and replies:
long-term memories sorted into four categories (fact, pattern, preference, capability),
kept as the agent's archival memories (`category`, `context`, `confidence`), so REST, the
other tools and the search engine see them too.

store_memory
    Stored fact memory: API endpoint is https://api.example.com/v1
    Already stored as fact memory: API endpoint is https://api.example.com/v1 (no change)
search_memories
    Found 3 memories for 'API':
    - [fact] API endpoint is https://api.example.com/v1
      Context: API integration discussion
    - [pattern] Users often ask about API authentication
      Confidence: 0.6                              only for a confidence below 1.0
    (The best 10 of 14 matches; use a higher limit, up to 20, to see more.)   when cut
    No memories found for 'sailing'.
list_memories
    My fact memories (5 total):
    - API endpoint is https://api.example.com/v1
      Context: API integration discussion
    - Database connection requires SSL on port 5432
    (The newest 20 of 25; use a higher limit, up to 50, to see more.)       when cut
    No fact memories stored yet.

Refusals are replies the model can act on, never errors, each opening with what failed:
    Failed to store memory: Invalid category 'invalid_category'
    Failed to store memory: Confidence must be a number from 0.0 to 1.0, not 1.5.
    Failed to search memories: limit must be a whole number from 1 to 20, not 50.
    Failed to list memories: 'category' is required (fact, pattern, preference or capability).

A memory shows as one line (line breaks inside it become spaces). Search covers every
memory of the agent, hybrid (BM25 and meaning) when an embedding backend is configured;
one stored without a category (over REST) shows as [uncategorized]. Storing is idempotent
by content: text already stored keeps the category, context and confidence it was stored
with, and the reply says so.
"""

import json
import math
from typing import Any

from api.llm.types import ToolSpec
from api.memory import archival, validity
from api.memory.errors import MemoryRefused
from api.memory.models import CATEGORIES, ArchivalMemory, Category
from api.memory.schemas import MAX_CONTEXT_CHARS
from api.tools.native.base import (
    Arguments,
    BadArguments,
    NativeTool,
    ToolContext,
    int_arg,
    listed_sources,
    searched_sources,
)

SEARCH_LIMIT = (1, 20, 10)  # minimum, maximum, default: seed 003's bounds
LIST_LIMIT = (1, 50, 20)
DEFAULT_CONFIDENCE = 1.0
CATEGORY_CHOICES = "fact, pattern, preference or capability"


class Refused(Exception):
    """Arguments the tool cannot act on; the message says why, for the model to retry."""


# --- arguments -------------------------------------------------------------------------


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _category(arguments: Arguments) -> Category:
    value = arguments.get("category")
    if value is None:
        raise Refused(f"'category' is required ({CATEGORY_CHOICES}).")
    name = value.strip().lower() if isinstance(value, str) else None
    for category in CATEGORIES:
        if name == category:
            return category
    raise Refused(f"Invalid category '{value}'")


def _text(arguments: Arguments, name: str, what: str) -> str:
    value = arguments.get(name)
    if value is None:
        raise Refused(f"'{name}' is required: {what}.")
    if not isinstance(value, str):
        raise Refused(f"'{name}' must be a string, not {_json(value)}.")
    return value


def _limit(arguments: Arguments, bounds: tuple[int, int, int]) -> int:
    """A whole number within bounds; "5" and 5.0 mean 5, as models sometimes send them."""
    low, high, default = bounds
    try:
        number: int | None = int_arg(arguments, "limit", default=default)
    except BadArguments:
        number = None
    if number is None or not low <= number <= high:
        value = arguments.get("limit")
        raise Refused(f"limit must be a whole number from {low} to {high}, not {_json(value)}.")
    return number


def _confidence(arguments: Arguments) -> float:
    value = arguments.get("confidence")
    if value is None:
        return DEFAULT_CONFIDENCE
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise Refused(f"Confidence must be a number from 0.0 to 1.0, not {_json(value)}.")
    return number


# --- replies ---------------------------------------------------------------------------


def one_line(text: str) -> str:
    return " ".join(text.split())


def _details(memory: ArchivalMemory) -> list[str]:
    """The lines under a memory: its context, and its confidence when below certain."""
    lines = []
    if memory.context:
        lines.append(f"  Context: {one_line(memory.context)}")
    if memory.confidence is not None and memory.confidence < 1.0:
        lines.append(f"  Confidence: {memory.confidence:g}")
    return lines


def _quantity(count: int) -> str:
    return f"{count} memory" if count == 1 else f"{count} memories"


def render_found(query: str, found: archival.SearchPage, limit: int) -> str:
    if not found.matches:
        return f"No memories found for '{query}'."
    rows = [f"Found {_quantity(len(found.matches))} for '{query}':"]
    for memory in found.memories:
        kind = memory.category or "uncategorized"
        rows.append(f"- [{kind}] {one_line(memory.content)}{validity.until(memory)}")
        rows += _details(memory)
    if found.total > len(found.matches):
        more = (
            f"use a higher limit, up to {SEARCH_LIMIT[1]}, to see more"
            if limit < SEARCH_LIMIT[1]
            else "search with other keywords to narrow them down"
        )
        rows.append(f"(The best {len(found.matches)} of {found.total} matches; {more}.)")
    return "\n".join(rows)


def render_listing(category: Category, listing: archival.Listing, limit: int) -> str:
    if listing.total == 0:
        return f"No {category} memories stored yet."
    rows = [f"My {category} memories ({listing.total} total):"]
    for memory in listing.memories:
        rows.append(f"- {one_line(memory.content)}")
        rows += _details(memory)
    shown = len(listing.memories)
    if listing.total > shown:
        more = (
            f"use a higher limit, up to {LIST_LIMIT[1]}, to see more"
            if limit < LIST_LIMIT[1]
            else "search_memories finds older ones by keyword"
        )
        rows.append(f"(The newest {shown} of {listing.total}; {more}.)")
    return "\n".join(rows)


# --- store_memory ----------------------------------------------------------------------


async def _store(context: ToolContext, arguments: Arguments) -> str:
    category = _category(arguments)
    content = _text(arguments, "content", "the information to remember").strip()
    if not content:
        raise Refused("Content is empty; give the information to remember.")
    if len(content) > archival.MAX_CONTENT_CHARS:
        raise Refused(
            f"Content is too long ({len(content)} characters; at most "
            f"{archival.MAX_CONTENT_CHARS}). Keep it specific and concise, or split it into "
            "several memories."
        )
    why = arguments.get("context")
    if why is not None:
        why = _text(arguments, "context", "when or why this is important")
        if len(why.strip()) > MAX_CONTEXT_CHARS:
            raise Refused(
                f"Context is too long ({len(why.strip())} characters; at most {MAX_CONTEXT_CHARS})."
            )
    confidence = _confidence(arguments)
    result = await archival.insert(
        context.repos,
        context.search,
        context.agent_id,
        content,
        category=category,
        context=why,
        confidence=confidence,
        automatic=context.auto_supersede,
    )
    memory = result.memory
    if result.created:
        stored = f"Stored {category} memory: {memory.content}"
        return "\n".join([stored, *validity.replacement_lines(result)])
    kind = f"{memory.category} memory" if memory.category else "an uncategorized memory"
    return f"Already stored as {kind}: {memory.content} (no change)"


async def store_memory(context: ToolContext, arguments: Arguments) -> str:
    try:
        return await _store(context, arguments)
    except (Refused, MemoryRefused) as e:
        return f"Failed to store memory: {e}"


STORE_MEMORY = NativeTool(
    ToolSpec(
        name="store_memory",
        description="Store important information in my long-term memory for future use.\n"
        "Use this tool to remember:\n"
        "- Facts: Concrete information about APIs, data formats, configurations, etc.\n"
        "- Patterns: Recurring behaviors or trends I've observed\n"
        "- Preferences: User preferences or system settings I've learned\n"
        "- Capabilities: My own abilities or limitations I've discovered\n"
        "\n"
        "This memory persists across conversations and helps me improve over time.",
        parameters={
            "type": "object",
            "properties": {
                "category": {
                    "type": "string",
                    "enum": ["fact", "pattern", "preference", "capability"],
                    "description": "Type of memory: fact (concrete info), pattern (observed "
                    "behavior), preference (learned preference), capability (my "
                    "ability/limitation)",
                },
                "content": {
                    "type": "string",
                    "description": "The information to remember. Be specific and concise.",
                },
                "context": {
                    "type": "string",
                    "description": "Optional context about when/why this is important",
                },
                "confidence": {
                    "type": "number",
                    "minimum": 0.0,
                    "maximum": 1.0,
                    "default": 1.0,
                    "description": "Confidence level in this memory (0.0 to 1.0)",
                },
            },
            "required": ["category", "content"],
        },
    ),
    store_memory,
)


# --- search_memories -------------------------------------------------------------------


async def _search(context: ToolContext, arguments: Arguments) -> str:
    query = one_line(_text(arguments, "query", "keywords to search for"))
    if not query:
        raise Refused("The query is empty; give keywords related to what you're looking for.")
    limit = _limit(arguments, SEARCH_LIMIT)
    result = await archival.search(context.search, context.agent_id, query, page_size=limit)
    context.note(searched_sources(SEARCH_MEMORIES_NAME, result.matches))
    return render_found(query, result, limit)


async def search_memories(context: ToolContext, arguments: Arguments) -> str:
    try:
        return await _search(context, arguments)
    except (Refused, MemoryRefused) as e:
        return f"Failed to search memories: {e}"


SEARCH_MEMORIES_NAME = "search_memories"
SEARCH_MEMORIES = NativeTool(
    ToolSpec(
        name=SEARCH_MEMORIES_NAME,
        description="Search my long-term memory for information relevant to the current "
        "conversation.\n"
        "Use this tool when you need to recall:\n"
        "- Previous facts you've learned\n"
        "- Patterns you've observed\n"
        "- User preferences you've discovered\n"
        "- Your own capabilities or limitations\n"
        "\n"
        "The search looks through all your stored memories to find relevant information.",
        parameters={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Search query to find relevant memories. Use keywords "
                    "related to what you're looking for.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "default": 10,
                    "description": "Maximum number of memories to retrieve",
                },
            },
            "required": ["query"],
        },
    ),
    search_memories,
)


# --- list_memories ---------------------------------------------------------------------


async def _list(context: ToolContext, arguments: Arguments) -> str:
    category = _category(arguments)
    limit = _limit(arguments, LIST_LIMIT)
    listing = await archival.newest(
        context.search, context.agent_id, categories=frozenset({category}), limit=limit
    )
    context.note(listed_sources(LIST_MEMORIES_NAME, listing.memories))
    return render_listing(category, listing, limit)


async def list_memories(context: ToolContext, arguments: Arguments) -> str:
    try:
        return await _list(context, arguments)
    except (Refused, MemoryRefused) as e:
        return f"Failed to list memories: {e}"


LIST_MEMORIES_NAME = "list_memories"
LIST_MEMORIES = NativeTool(
    ToolSpec(
        name=LIST_MEMORIES_NAME,
        description="List my memories organized by category.\n"
        "Use this tool to browse what you've learned in different areas:\n"
        "- Facts: Concrete information you've stored\n"
        "- Patterns: Behavioral patterns you've observed\n"
        "- Preferences: User or system preferences you've learned\n"
        "- Capabilities: Your own abilities or limitations you've discovered\n"
        "\n"
        "This helps you understand what knowledge you have available.",
        parameters={
            "type": "object",
            "properties": {
                "category": {
                    "type": "string",
                    "enum": ["fact", "pattern", "preference", "capability"],
                    "description": "Category of memories to list",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 50,
                    "default": 20,
                    "description": "Maximum number of memories to retrieve",
                },
            },
            "required": ["category"],
        },
    ),
    list_memories,
)
