"""The use cases the REST routes call: blocks, lines and archival memories."""

from datetime import UTC, datetime

import pytest

from api.kit.clock import FrozenClock
from api.memory import archival, repository
from api.memory import service as memory_service
from api.memory.errors import (
    ArchivalMemoryNotFound,
    BlockExists,
    BlockFull,
    BlockNotFound,
    BlockTooLarge,
    DefaultBlockProtected,
    InvalidBlockName,
    InvalidWordLimit,
)
from api.repositories import Repositories
from api.runtime.architectures.krishna_memgpt import render_memory
from api.search.engine import SearchEngine
from api.store.table import Table
from tests.memory.conftest import AGENT


async def test_default_blocks_and_the_persona(store: Table) -> None:
    repos = Repositories.over(store)
    await memory_service.ensure_default_blocks(
        repos, AGENT, persona="Helpful and professional\n\nRemembers everything discussed"
    )
    human, persona = await memory_service.list_blocks(repos, AGENT)
    assert (human.name, human.description, human.word_limit, human.is_default) == (
        "human",
        "Facts about the user",
        5000,
        True,
    )
    assert persona.lines == ("Helpful and professional", "Remembers everything discussed")
    assert render_memory(await memory_service.list_blocks(repos, AGENT)) == (
        "<core_memory>\n"
        "[Human - Facts about the user]\n"
        "\n"
        "[Persona - Your traits and characteristics]\n"
        "1: Helpful and professional\n"
        "2: Remembers everything discussed\n"
        "</core_memory>"
    )


async def test_custom_block_lifecycle(store: Table) -> None:
    repos = Repositories.over(store)
    await memory_service.ensure_default_blocks(repos, AGENT)
    made = await memory_service.create_block(
        repos, AGENT, "Important_Financial_Data", description="Money matters", word_limit=300
    )
    assert (made.name, made.word_limit, made.is_default) == ("important_financial_data", 300, False)
    with pytest.raises(BlockExists):
        await memory_service.create_block(repos, AGENT, "important financial data")

    updated = await memory_service.update_block(
        repos, AGENT, "Important Financial Data", description="Finances", word_limit=400
    )
    assert (updated.description, updated.word_limit) == ("Finances", 400)

    names = [b.name for b in await memory_service.list_blocks(repos, AGENT)]
    assert names == ["human", "persona", "important_financial_data"]

    await memory_service.delete_block(repos, AGENT, "important_financial_data")
    with pytest.raises(BlockNotFound):
        await memory_service.read_block(repos, AGENT, "important_financial_data")
    with pytest.raises(DefaultBlockProtected):
        await memory_service.delete_block(repos, AGENT, "human")


async def test_block_definitions_are_checked(store: Table) -> None:
    repos = Repositories.over(store)
    with pytest.raises(InvalidBlockName):
        await memory_service.create_block(repos, AGENT, "  --  ")
    with pytest.raises(InvalidWordLimit):
        await memory_service.create_block(repos, AGENT, "notes", word_limit=0)
    with pytest.raises(InvalidWordLimit):
        await memory_service.create_block(repos, AGENT, "notes", word_limit=10**6)


async def test_write_lines_cleans_and_dedupes(store: Table) -> None:
    repos = Repositories.over(store)
    await memory_service.ensure_default_blocks(repos, AGENT)
    block = await memory_service.write_lines(
        repos, AGENT, "human", ["Name: Alice", "", "  Name:  Alice ", "Works at: Google"]
    )
    assert block.lines == ("Name: Alice", "Works at: Google")
    assert block.version == 2


async def test_a_lowered_limit_lets_the_block_shrink(store: Table) -> None:
    repos = Repositories.over(store)
    await memory_service.ensure_default_blocks(repos, AGENT)
    await memory_service.write_lines(repos, AGENT, "human", ["one two three", "four five"])
    await memory_service.update_block(repos, AGENT, "human", word_limit=3)
    change = await memory_service.replace_line(repos, AGENT, "human", 1, "one two")
    assert change.block.word_count == 4  # still over, but smaller: allowed


async def test_archival_list_get_delete_and_insert_again(
    store: Table, search: SearchEngine, clock: FrozenClock
) -> None:
    repos = Repositories.over(store)
    first = await archival.insert(repos, search, AGENT, "Older memory")
    clock.advance(60)
    second = await archival.insert(repos, search, AGENT, "Newer memory")
    memories, cursor = await archival.list_memories(repos, AGENT, limit=1)
    assert [m.content for m in memories] == ["Newer memory"]
    more, end = await archival.list_memories(repos, AGENT, limit=1, cursor=cursor)
    assert [m.content for m in more] == ["Older memory"]
    assert end is None

    fetched = await archival.get_memory(repos, AGENT, first.memory.memory_id)
    assert fetched == first.memory
    await archival.delete_memory(repos, search, AGENT, first.memory.memory_id)
    with pytest.raises(ArchivalMemoryNotFound):
        await archival.get_memory(repos, AGENT, first.memory.memory_id)
    with pytest.raises(ArchivalMemoryNotFound):
        await archival.get_memory(repos, AGENT, "not-an-id")

    # Deleting freed the text: it can be stored again.
    again = await archival.insert(repos, search, AGENT, "Older memory")
    assert again.created
    assert again.memory.memory_id != first.memory.memory_id
    assert second.created


async def test_memory_ids_carry_their_time(
    repos: Repositories, search: SearchEngine, clock: FrozenClock
) -> None:
    clock.set(datetime(2024, 1, 15, 10, 30, 0, 123456, tzinfo=UTC).timestamp())
    made = await archival.insert(repos, search, AGENT, "A memory")
    assert repository.created_at_of(made.memory.memory_id) == made.memory.created_at
    assert made.memory.created_at == datetime(2024, 1, 15, 10, 30, 0, 123456, tzinfo=UTC)
    assert repository.created_at_of("zz" * 16) is None


async def test_memories_of_another_agent_stay_apart(store: Table, search: SearchEngine) -> None:
    repos = Repositories.over(store)
    made = await archival.insert(repos, search, AGENT, "Private")
    with pytest.raises(ArchivalMemoryNotFound):
        await archival.get_memory(repos, "other-agent", made.memory.memory_id)
    found = await archival.search(search, "other-agent", "private")
    assert found.total == 0
    other = await archival.insert(repos, search, "other-agent", "Private")
    assert other.created


async def test_a_rewrite_with_a_new_word_limit_still_keeps_the_character_limit(
    store: Table,
) -> None:
    repos = Repositories.over(store)
    await memory_service.create_block(repos, AGENT, "goals", char_limit=20)
    with pytest.raises(BlockTooLarge):
        await memory_service.update_block(repos, AGENT, "goals", lines=["x" * 50], word_limit=100)
    with pytest.raises(BlockFull):
        await memory_service.update_block(repos, AGENT, "goals", lines=["a b c"], word_limit=2)
    assert not (await memory_service.read_block(repos, AGENT, "goals")).lines
    fitted = await memory_service.update_block(repos, AGENT, "goals", lines=["ok"], word_limit=5)
    assert (fitted.lines, fitted.word_limit, fitted.char_limit) == (("ok",), 5, 20)
