"""Seed 004's `char_limit`: enforced like a word limit, and warned about at 80% in the
tools' replies, which say characters when those are the fuller limit."""

import pytest

from api.memory import service as memory_service
from api.memory.errors import BlockTooLarge, InvalidCharLimit
from api.tools.native import NATIVE_MEMORY_TOOLS, ToolContext
from tests.memory.conftest import AGENT, ctx, repos, search, store

__all__ = ["ctx", "repos", "search", "store"]


async def test_a_char_limit_warns_and_refuses(ctx: ToolContext) -> None:
    await memory_service.create_block(ctx.repos, AGENT, "notes", description="Notes", char_limit=20)
    append = NATIVE_MEMORY_TOOLS["core_memory_append"]
    reply = await append.execute(ctx, {"block": "notes", "content": "A" * 17})
    assert reply == (
        'Appended to [notes] at line 1: "AAAAAAAAAAAAAAAAA" (1/5000 words)\n\n'
        "Warning: [notes] is at 85% capacity (17/20 characters). Consolidate lines with "
        "core_memory_replace or core_memory_delete, or move details to archival memory with "
        "archival_memory_insert. If it stays this full, older lines will be moved to archival "
        "memory automatically."
    )
    refused = await append.execute(ctx, {"block": "notes", "content": "BBBB"})
    assert refused.startswith("Cannot append to [notes]: it would hold 21 characters (at most 20)")
    block = await memory_service.read_block(ctx.repos, AGENT, "notes")
    assert block.lines == ("A" * 17,)
    with pytest.raises(BlockTooLarge):
        await memory_service.create_block(ctx.repos, AGENT, "small", content="x" * 6, char_limit=5)
    with pytest.raises(InvalidCharLimit):
        await memory_service.create_block(ctx.repos, AGENT, "zero", char_limit=0)


async def test_without_a_char_limit_nothing_changes(ctx: ToolContext) -> None:
    block = await memory_service.read_block(ctx.repos, AGENT, "human")
    assert block.char_limit is None
    assert block.percent_used == 0
    assert not block.needs_warning
