"""Seed 003's three tools: their specs as the seed gives them, their replies character for
character, what they store, and a reply (never an error) for every argument they cannot
act on. Search here runs without an embedder (lexical); tests/runtime runs it hybrid."""

import json
import math
from typing import Any

import pytest

from api.kit.clock import FrozenClock
from api.llm.types import ToolCall
from api.memory import archival
from api.memory.schemas import MAX_CONTEXT_CHARS
from api.repositories import Repositories
from api.runtime.toolbox import Toolbox
from api.search.engine import SearchEngine
from api.tools.native import CATEGORIZED_MEMORY_TOOLS, ToolContext
from tests.memory.helpers import at, call

# The "tools" of seed 003's example prompt, copied from the seed: what the model must see.
SEED_TOOLS = json.loads(r"""
[
  {
    "type": "function",
    "function": {
      "name": "store_memory",
      "description": "Store important information in my long-term memory for future use.\nUse this tool to remember:\n- Facts: Concrete information about APIs, data formats, configurations, etc.\n- Patterns: Recurring behaviors or trends I've observed\n- Preferences: User preferences or system settings I've learned\n- Capabilities: My own abilities or limitations I've discovered\n\nThis memory persists across conversations and helps me improve over time.",
      "parameters": {
        "type": "object",
        "properties": {
          "category": {
            "type": "string",
            "enum": ["fact", "pattern", "preference", "capability"],
            "description": "Type of memory: fact (concrete info), pattern (observed behavior), preference (learned preference), capability (my ability/limitation)"
          },
          "content": {
            "type": "string",
            "description": "The information to remember. Be specific and concise."
          },
          "context": {
            "type": "string",
            "description": "Optional context about when/why this is important"
          },
          "confidence": {
            "type": "number",
            "minimum": 0.0,
            "maximum": 1.0,
            "default": 1.0,
            "description": "Confidence level in this memory (0.0 to 1.0)"
          }
        },
        "required": ["category", "content"]
      }
    }
  },
  {
    "type": "function",
    "function": {
      "name": "search_memories",
      "description": "Search my long-term memory for information relevant to the current conversation.\nUse this tool when you need to recall:\n- Previous facts you've learned\n- Patterns you've observed\n- User preferences you've discovered\n- Your own capabilities or limitations\n\nThe search looks through all your stored memories to find relevant information.",
      "parameters": {
        "type": "object",
        "properties": {
          "query": {
            "type": "string",
            "description": "Search query to find relevant memories. Use keywords related to what you're looking for."
          },
          "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 20,
            "default": 10,
            "description": "Maximum number of memories to retrieve"
          }
        },
        "required": ["query"]
      }
    }
  },
  {
    "type": "function",
    "function": {
      "name": "list_memories",
      "description": "List my memories organized by category.\nUse this tool to browse what you've learned in different areas:\n- Facts: Concrete information you've stored\n- Patterns: Behavioral patterns you've observed\n- Preferences: User or system preferences you've learned\n- Capabilities: Your own abilities or limitations you've discovered\n\nThis helps you understand what knowledge you have available.",
      "parameters": {
        "type": "object",
        "properties": {
          "category": {
            "type": "string",
            "enum": ["fact", "pattern", "preference", "capability"],
            "description": "Category of memories to list"
          },
          "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 50,
            "default": 20,
            "description": "Maximum number of memories to retrieve"
          }
        },
        "required": ["category"]
      }
    }
  }
]
""")  # noqa: E501

# Seed 003's list_memories example, oldest first (the listing shows them newest first).
FACTS = [
    ("REST APIs typically use JSON format", None),
    ("PostgreSQL default port is 5432", None),
    ("User authentication uses JWT tokens", None),
    ("Database connection requires SSL on port 5432", None),
    ("API endpoint is https://api.example.com/v1", "API integration discussion"),
]


def as_sent(tool: str) -> dict[str, Any]:
    spec = CATEGORIZED_MEMORY_TOOLS[tool].spec
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


async def store(ctx: ToolContext, clock: FrozenClock, **arguments: Any) -> str:
    clock.advance(60)  # each memory a minute after the one before
    return await call(ctx, "store_memory", **arguments)


async def stored(ctx: ToolContext) -> list[dict[str, Any]]:
    memories, _ = await archival.list_memories(ctx.repos, ctx.agent_id)
    return [
        {
            "content": m.content,
            "category": m.category,
            "context": m.context,
            "confidence": m.confidence,
        }
        for m in memories
    ]


def test_the_specs_are_seed_003s_verbatim() -> None:
    assert [as_sent(name) for name in CATEGORIZED_MEMORY_TOOLS] == SEED_TOOLS
    # Byte for byte as JSON too: 0.0 and 1.0 stay floats, the keys keep the seed's order.
    assert json.dumps([as_sent(n) for n in CATEGORIZED_MEMORY_TOOLS]) == json.dumps(SEED_TOOLS)


# --- store_memory ----------------------------------------------------------------------


async def test_store_replies_as_in_the_seed_and_keeps_every_field(
    ctx: ToolContext, clock: FrozenClock
) -> None:
    reply = await store(
        ctx,
        clock,
        category="fact",
        content="API endpoint is https://api.example.com/v1",
        context="  API integration discussion ",
        confidence=0.9,
    )
    assert reply == "Stored fact memory: API endpoint is https://api.example.com/v1"
    assert await store(ctx, clock, category="pattern", content=" Users ask about auth\n") == (
        "Stored pattern memory: Users ask about auth"
    )
    assert await stored(ctx) == [
        {
            "content": "Users ask about auth",
            "category": "pattern",
            "context": None,
            "confidence": 1.0,
        },
        {
            "content": "API endpoint is https://api.example.com/v1",
            "category": "fact",
            "context": "API integration discussion",
            "confidence": 0.9,
        },
    ]


async def test_lenient_where_the_meaning_is_clear(ctx: ToolContext, clock: FrozenClock) -> None:
    """A category in capitals, a confidence or limit sent as a string, an empty context."""
    assert await store(
        ctx, clock, category=" Capability", content="Can write SQL", confidence="0.5", context=" "
    ) == ("Stored capability memory: Can write SQL")
    assert await store(ctx, clock, category="fact", content="Port 5432", confidence=0) == (
        "Stored fact memory: Port 5432"
    )
    assert await stored(ctx) == [
        {"content": "Port 5432", "category": "fact", "context": None, "confidence": 0.0},
        {"content": "Can write SQL", "category": "capability", "context": None, "confidence": 0.5},
    ]
    assert (await call(ctx, "list_memories", category="capability", limit="1")).startswith(
        "My capability memories (1 total):"
    )


async def test_the_same_content_is_stored_once(ctx: ToolContext, clock: FrozenClock) -> None:
    text = "PostgreSQL default port is 5432"
    await store(ctx, clock, category="fact", content=text, context="setup")
    # Again, even as another category: the memory as first stored, and the model is told.
    assert await store(ctx, clock, category="pattern", content=f"{text}  ") == (
        f"Already stored as fact memory: {text} (no change)"
    )
    clock.advance(60)
    await archival.insert(ctx.repos, ctx.search, ctx.agent_id, "Stored over REST, no category.")
    assert await store(ctx, clock, category="fact", content="Stored over REST, no category.") == (
        "Already stored as an uncategorized memory: Stored over REST, no category. (no change)"
    )
    assert [(m["content"], m["category"], m["context"]) for m in await stored(ctx)] == [
        ("Stored over REST, no category.", None, None),
        (text, "fact", "setup"),
    ]


@pytest.mark.parametrize(
    ("arguments", "reply"),
    [
        (
            {"category": "invalid_category", "content": "x"},
            "Failed to store memory: Invalid category 'invalid_category'",
        ),
        ({"category": "", "content": "x"}, "Failed to store memory: Invalid category ''"),
        ({"category": 3, "content": "x"}, "Failed to store memory: Invalid category '3'"),
        (
            {"content": "x"},
            "Failed to store memory: 'category' is required (fact, pattern, preference or "
            "capability).",
        ),
        (
            {"category": "fact"},
            "Failed to store memory: 'content' is required: the information to remember.",
        ),
        (
            {"category": "fact", "content": ["a", "b"]},
            'Failed to store memory: \'content\' must be a string, not ["a", "b"].',
        ),
        (
            {"category": "fact", "content": " \n "},
            "Failed to store memory: Content is empty; give the information to remember.",
        ),
        (
            {"category": "fact", "content": "x" * (archival.MAX_CONTENT_CHARS + 1)},
            f"Failed to store memory: Content is too long ({archival.MAX_CONTENT_CHARS + 1} "
            f"characters; at most {archival.MAX_CONTENT_CHARS}). Keep it specific and concise, "
            "or split it into several memories.",
        ),
        (
            {"category": "fact", "content": "x", "context": 42},
            "Failed to store memory: 'context' must be a string, not 42.",
        ),
        (
            {"category": "fact", "content": "x", "context": "c" * (MAX_CONTEXT_CHARS + 1)},
            f"Failed to store memory: Context is too long ({MAX_CONTEXT_CHARS + 1} characters; "
            f"at most {MAX_CONTEXT_CHARS}).",
        ),
        (
            {"category": "fact", "content": "x", "confidence": 1.5},
            "Failed to store memory: Confidence must be a number from 0.0 to 1.0, not 1.5.",
        ),
        (
            {"category": "fact", "content": "x", "confidence": -0.1},
            "Failed to store memory: Confidence must be a number from 0.0 to 1.0, not -0.1.",
        ),
        (
            {"category": "fact", "content": "x", "confidence": "high"},
            'Failed to store memory: Confidence must be a number from 0.0 to 1.0, not "high".',
        ),
        (
            {"category": "fact", "content": "x", "confidence": True},
            "Failed to store memory: Confidence must be a number from 0.0 to 1.0, not true.",
        ),
        (
            {"category": "fact", "content": "x", "confidence": math.nan},
            "Failed to store memory: Confidence must be a number from 0.0 to 1.0, not NaN.",
        ),
    ],
)
async def test_store_refusals_are_replies_and_store_nothing(
    ctx: ToolContext, arguments: dict[str, Any], reply: str
) -> None:
    assert await call(ctx, "store_memory", **arguments) == reply
    assert await stored(ctx) == []


# --- search_memories -------------------------------------------------------------------


async def seed_example(ctx: ToolContext, clock: FrozenClock) -> None:
    """Seed 003's search example, stored oldest first (equal matches show newest first)."""
    await store(ctx, clock, category="preference", content="User prefers detailed API examples")
    await store(
        ctx,
        clock,
        category="pattern",
        content="Users often ask about API authentication",
        context="User assistance patterns",
    )
    await store(
        ctx,
        clock,
        category="fact",
        content="API endpoint is https://api.example.com/v1",
        context="API integration discussion",
    )


async def test_search_replies_as_in_the_seed(ctx: ToolContext, clock: FrozenClock) -> None:
    await seed_example(ctx, clock)
    await store(ctx, clock, category="fact", content="PostgreSQL default port is 5432")
    assert await call(ctx, "search_memories", query="API") == (
        "Found 3 memories for 'API':\n"
        "- [fact] API endpoint is https://api.example.com/v1\n"
        "  Context: API integration discussion\n"
        "- [pattern] Users often ask about API authentication\n"
        "  Context: User assistance patterns\n"
        "- [preference] User prefers detailed API examples"
    )


async def test_search_finds_every_memory_and_shows_doubt(
    ctx: ToolContext, clock: FrozenClock
) -> None:
    await store(ctx, clock, category="pattern", content="Deploys fail\non Fridays", confidence=0.25)
    clock.advance(60)  # newer: among equal matches, it comes first
    await archival.insert(ctx.repos, ctx.search, ctx.agent_id, "Deploys need a green build.")
    assert await call(ctx, "search_memories", query="  deploys  ", limit=5) == (
        "Found 2 memories for 'deploys':\n"
        "- [uncategorized] Deploys need a green build.\n"
        "- [pattern] Deploys fail on Fridays\n"
        "  Confidence: 0.25"
    )
    assert await call(ctx, "search_memories", query="Friday deploys", limit=1) == (
        "Found 1 memory for 'Friday deploys':\n"
        "- [pattern] Deploys fail on Fridays\n"
        "  Confidence: 0.25\n"
        "(The best 1 of 2 matches; use a higher limit, up to 20, to see more.)"
    )


async def test_search_at_its_largest_limit_says_to_narrow_down(
    repos: Repositories, ctx: ToolContext, search: SearchEngine, clock: FrozenClock
) -> None:
    for i in range(21):
        at(clock, f"2024-01-{i + 1:02d}")
        await archival.insert(repos, search, ctx.agent_id, f"Coffee note {i}.", category="fact")
    reply = await call(ctx, "search_memories", query="coffee", limit=20)
    lines = reply.splitlines()
    assert lines[0] == "Found 20 memories for 'coffee':"
    assert lines[1] == "- [fact] Coffee note 20."  # equal matches: newest first
    assert len(lines) == 22
    assert lines[-1] == (
        "(The best 20 of 21 matches; search with other keywords to narrow them down.)"
    )
    assert (await call(ctx, "search_memories", query="coffee")).splitlines()[-1] == (
        "(The best 10 of 21 matches; use a higher limit, up to 20, to see more.)"
    )


@pytest.mark.parametrize(
    ("arguments", "reply"),
    [
        ({"query": "sailing"}, "No memories found for 'sailing'."),
        (
            {"query": " \t"},
            "Failed to search memories: The query is empty; give keywords related to what "
            "you're looking for.",
        ),
        ({}, "Failed to search memories: 'query' is required: keywords to search for."),
        (
            {"query": {"text": "API"}},
            'Failed to search memories: \'query\' must be a string, not {"text": "API"}.',
        ),
        (
            {"query": "API", "limit": 0},
            "Failed to search memories: limit must be a whole number from 1 to 20, not 0.",
        ),
        (
            {"query": "API", "limit": 21},
            "Failed to search memories: limit must be a whole number from 1 to 20, not 21.",
        ),
        (
            {"query": "API", "limit": 2.5},
            "Failed to search memories: limit must be a whole number from 1 to 20, not 2.5.",
        ),
        (
            {"query": "API", "limit": "-3"},
            'Failed to search memories: limit must be a whole number from 1 to 20, not "-3".',
        ),
        (
            {"query": "API", "limit": True},
            "Failed to search memories: limit must be a whole number from 1 to 20, not true.",
        ),
    ],
)
async def test_search_refusals_are_replies(
    ctx: ToolContext, clock: FrozenClock, arguments: dict[str, Any], reply: str
) -> None:
    await seed_example(ctx, clock)
    assert await call(ctx, "search_memories", **arguments) == reply


async def test_a_limit_sent_as_text_or_a_whole_float_is_a_number(
    ctx: ToolContext, clock: FrozenClock
) -> None:
    await seed_example(ctx, clock)
    for limit in ("2", 2.0):
        reply = await call(ctx, "search_memories", query="API", limit=limit)
        assert reply.startswith("Found 2 memories for 'API':\n- [fact] API endpoint"), reply


# --- list_memories ---------------------------------------------------------------------


async def test_list_replies_as_in_the_seed(ctx: ToolContext, clock: FrozenClock) -> None:
    for content, why in FACTS:
        await store(ctx, clock, category="fact", content=content, context=why)
    await store(ctx, clock, category="pattern", content="Users often ask about API auth")
    assert await call(ctx, "list_memories", category="fact") == (
        "My fact memories (5 total):\n"
        "- API endpoint is https://api.example.com/v1\n"
        "  Context: API integration discussion\n"
        "- Database connection requires SSL on port 5432\n"
        "- User authentication uses JWT tokens\n"
        "- PostgreSQL default port is 5432\n"
        "- REST APIs typically use JSON format"
    )
    assert await call(ctx, "list_memories", category="fact", limit=2) == (
        "My fact memories (5 total):\n"
        "- API endpoint is https://api.example.com/v1\n"
        "  Context: API integration discussion\n"
        "- Database connection requires SSL on port 5432\n"
        "(The newest 2 of 5; use a higher limit, up to 50, to see more.)"
    )
    assert await call(ctx, "list_memories", category="pattern") == (
        "My pattern memories (1 total):\n- Users often ask about API auth"
    )
    assert await call(ctx, "list_memories", category="capability") == (
        "No capability memories stored yet."
    )


async def test_list_at_its_largest_limit_points_to_search(
    repos: Repositories, ctx: ToolContext, search: SearchEngine, clock: FrozenClock
) -> None:
    for i in range(51):
        clock.advance(1)
        await archival.insert(
            repos, search, ctx.agent_id, f"Preference {i}.", category="preference"
        )
    reply = await call(ctx, "list_memories", category="preference", limit=50)
    lines = reply.splitlines()
    assert lines[:3] == [
        "My preference memories (51 total):",
        "- Preference 50.",
        "- Preference 49.",
    ]
    assert len(lines) == 52
    assert lines[-1] == "(The newest 50 of 51; search_memories finds older ones by keyword.)"


async def test_list_sees_what_another_server_wrote_and_deleted(
    ctx: ToolContext, clock: FrozenClock
) -> None:
    other = SearchEngine(ctx.repos.search, None, clock)  # another replica on the same table
    await store(ctx, clock, category="fact", content="First fact")
    assert await call(ctx, "list_memories", category="fact") == (
        "My fact memories (1 total):\n- First fact"
    )
    clock.advance(60)
    second = await archival.insert(ctx.repos, other, ctx.agent_id, "Second fact", category="fact")
    assert await call(ctx, "list_memories", category="fact") == (
        "My fact memories (2 total):\n- Second fact\n- First fact"
    )
    await archival.delete_memory(ctx.repos, other, ctx.agent_id, second.memory.memory_id)
    assert await call(ctx, "list_memories", category="fact") == (
        "My fact memories (1 total):\n- First fact"
    )


@pytest.mark.parametrize(
    ("arguments", "reply"),
    [
        (
            {"category": "opinion"},
            "Failed to list memories: Invalid category 'opinion'",
        ),
        (
            {},
            "Failed to list memories: 'category' is required (fact, pattern, preference or "
            "capability).",
        ),
        (
            {"category": "fact", "limit": 51},
            "Failed to list memories: limit must be a whole number from 1 to 50, not 51.",
        ),
        (
            {"category": "fact", "limit": 0},
            "Failed to list memories: limit must be a whole number from 1 to 50, not 0.",
        ),
        (
            {"category": "fact", "limit": "all"},
            'Failed to list memories: limit must be a whole number from 1 to 50, not "all".',
        ),
    ],
)
async def test_list_refusals_are_replies(
    ctx: ToolContext, clock: FrozenClock, arguments: dict[str, Any], reply: str
) -> None:
    await store(ctx, clock, category="fact", content="A fact")
    assert await call(ctx, "list_memories", **arguments) == reply


async def test_a_seed_000_tool_is_not_one_of_these(ctx: ToolContext) -> None:
    tools = Toolbox(ctx, list(CATEGORIZED_MEMORY_TOOLS.values()))
    made_up = ToolCall(id="call_1", name="core_memory_append", arguments={"block": "human"})
    assert await tools.run(made_up) == (
        "There is no tool 'core_memory_append'. Available tools: store_memory, "
        "search_memories, list_memories."
    )
