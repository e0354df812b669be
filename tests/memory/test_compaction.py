"""Warned turns and automatic compaction: nothing taken out of a block is ever lost."""

from collections.abc import AsyncIterator, Sequence

from api.kit.clock import FrozenClock
from api.llm.errors import ProviderUnavailable
from api.llm.offline import OfflineProvider
from api.llm.types import ChatRequest, Finish, LLMEvent, TextDelta
from api.memory import archival, blocks, compaction
from api.memory import service as memory_service
from api.memory.compaction import archived_line, note_turn
from api.memory.repository import MemoryRepository
from api.memory.summarizer import (
    LLMSummarizer,
    TruncatingSummarizer,
    summarizer_for,
    summary_line,
)
from api.tools.native import ToolContext
from tests.stored import all_archival

LIMIT = 100


def fact(i: int) -> str:
    return f"Fact number {i} about things"  # 5 words


async def full_block(ctx: ToolContext, facts: int = 17) -> list[str]:
    """A 100-word block holding 5 words per fact: 17 facts are 85%."""
    await memory_service.create_block(ctx.repos, ctx.agent_id, "notes", word_limit=LIMIT)
    lines = [fact(i) for i in range(1, facts + 1)]
    for line in lines:
        await memory_service.append_line(ctx.repos, ctx.agent_id, "notes", line)
    return lines


async def archived_texts(memory: MemoryRepository, agent_id: str) -> set[str]:
    return {m.content for m in await all_archival(memory, agent_id)}


async def test_compaction_after_three_warned_turns(ctx: ToolContext, clock: FrozenClock) -> None:
    lines = await full_block(ctx)
    first = await note_turn(ctx.repos, ctx.search, ctx.agent_id, ctx.summarizer)
    second = await note_turn(ctx.repos, ctx.search, ctx.agent_id, ctx.summarizer)
    assert (first.warnings, first.compactions) == ({"notes": 1}, [])
    assert (second.warnings, second.compactions) == ({"notes": 2}, [])

    third = await note_turn(ctx.repos, ctx.search, ctx.agent_id, ctx.summarizer)
    assert third.warnings == {}
    [done] = third.compactions
    block = await memory_service.read_block(ctx.repos, ctx.agent_id, "notes")
    assert block.word_count < LIMIT
    assert not block.needs_warning
    assert (done.words_before, done.words_after) == (85, block.word_count)

    # Every line taken out is in archival memory, and searchable there.
    removed = [line for line in lines if line not in block.lines]
    assert removed
    assert list(done.archived) == removed
    stored = await archived_texts(ctx.repos.memory, ctx.agent_id)
    assert {archived_line("notes", line) for line in removed} <= stored
    found = await archival.search(ctx.search, ctx.agent_id, "Fact number 1", page_size=50)
    assert archived_line("notes", fact(1)) in [m.content for m in found.memories]

    # The newest lines stay, behind a note of what moved.
    assert block.lines[0] == summary_line(len(removed))
    assert list(block.lines[1:]) == lines[len(removed) :]

    # The count starts over: the next turn neither warns nor compacts.
    fourth = await note_turn(ctx.repos, ctx.search, ctx.agent_id, ctx.summarizer)
    assert (fourth.warnings, fourth.compactions) == ({}, [])


async def test_a_block_brought_under_80_percent_starts_counting_again(
    ctx: ToolContext, clock: FrozenClock
) -> None:
    await full_block(ctx)
    await note_turn(ctx.repos, ctx.search, ctx.agent_id, ctx.summarizer)
    await note_turn(ctx.repos, ctx.search, ctx.agent_id, ctx.summarizer)
    for _ in range(2):  # the model heeded the warning: 75 words
        await memory_service.delete_line(ctx.repos, ctx.agent_id, "notes", 1)
    assert (await note_turn(ctx.repos, ctx.search, ctx.agent_id, ctx.summarizer)).warnings == {}
    assert (await ctx.repos.memory.blocks_and_warnings(ctx.agent_id))[1] == {}
    await memory_service.append_line(ctx.repos, ctx.agent_id, "notes", fact(99))
    report = await note_turn(ctx.repos, ctx.search, ctx.agent_id, ctx.summarizer)
    assert (report.warnings, report.compactions) == ({"notes": 1}, [])


class Rewriter:
    """A model that merges the block into one line."""

    async def summarize(self, block: str, lines: Sequence[str], word_limit: int) -> list[str]:
        return ["Many facts about things, numbered 1 to 17"]


class Verbose:
    """A model whose summary is no shorter than the block."""

    async def summarize(self, block: str, lines: Sequence[str], word_limit: int) -> list[str]:
        return [*lines, "And one more thought"]


class Down:
    async def summarize(self, block: str, lines: Sequence[str], word_limit: int) -> list[str]:
        raise ProviderUnavailable("The provider is down.")


async def test_a_rewrite_archives_every_original_line(ctx: ToolContext, clock: FrozenClock) -> None:
    lines = await full_block(ctx)
    done = await compaction.compact_block(ctx.repos, ctx.search, ctx.agent_id, "notes", Rewriter())
    block = await memory_service.read_block(ctx.repos, ctx.agent_id, "notes")
    assert block.lines == ("Many facts about things, numbered 1 to 17",)
    assert list(done.archived) == lines
    stored = await archived_texts(ctx.repos.memory, ctx.agent_id)
    assert {archived_line("notes", line) for line in lines} <= stored


async def test_a_useless_or_failed_summary_falls_back_to_the_rule(
    ctx: ToolContext, clock: FrozenClock
) -> None:
    lines = await full_block(ctx)
    expected = await TruncatingSummarizer().summarize("notes", lines, LIMIT)
    for summarizer in (Verbose(), Down()):
        await memory_service.write_lines(ctx.repos, ctx.agent_id, "notes", lines)
        await compaction.compact_block(ctx.repos, ctx.search, ctx.agent_id, "notes", summarizer)
        block = await memory_service.read_block(ctx.repos, ctx.agent_id, "notes")
        assert list(block.lines) == expected


async def test_compacting_twice_archives_each_line_once(
    ctx: ToolContext, clock: FrozenClock
) -> None:
    lines = await full_block(ctx)
    await compaction.compact_block(ctx.repos, ctx.search, ctx.agent_id, "notes", ctx.summarizer)
    await memory_service.write_lines(ctx.repos, ctx.agent_id, "notes", lines)
    await compaction.compact_block(ctx.repos, ctx.search, ctx.agent_id, "notes", ctx.summarizer)
    contents = [m.content for m in await all_archival(ctx.repos.memory, ctx.agent_id)]
    assert len(contents) == len(set(contents))


async def test_the_rule_keeps_newest_lines_under_half_the_limit() -> None:
    lines = [fact(i) for i in range(1, 18)]
    kept = await TruncatingSummarizer().summarize("notes", lines, LIMIT)
    assert blocks.count_words(kept) <= LIMIT // 2
    assert kept == [summary_line(9), *lines[9:]]
    assert await TruncatingSummarizer().summarize("notes", lines[:2], LIMIT) == lines[:2]


class ScriptedModel:
    """A provider that answers every request with the same text, and records the requests."""

    name = "scripted"

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[ChatRequest] = []

    async def stream(self, request: ChatRequest) -> AsyncIterator[LLMEvent]:
        self.requests.append(request)
        for line in self.text.splitlines(keepends=True):
            yield TextDelta(line)
        yield Finish("stop")

    async def list_models(self) -> list[str]:
        return ["scripted-1"]

    async def aclose(self) -> None:
        return None


async def test_the_llm_summarizer_asks_for_half_and_reads_lines() -> None:
    model = ScriptedModel("1: Likes coffee and hiking\n- Lives in London\n\n  \n")
    lines = await LLMSummarizer(model, "scripted-1").summarize("human", ["a", "b"], 5000)
    assert lines == ["Likes coffee and hiking", "Lives in London"]
    [request] = model.requests
    assert request.model == "scripted-1"
    assert "at most 2500 words" in request.messages[0].content


def test_the_offline_model_gets_the_deterministic_rule() -> None:
    assert isinstance(summarizer_for(OfflineProvider(), "offline-demo"), TruncatingSummarizer)
    assert isinstance(summarizer_for(ScriptedModel(""), "scripted-1"), LLMSummarizer)


async def test_a_block_relieved_before_compaction_is_left_alone(ctx: ToolContext) -> None:
    from api.memory import compaction

    await memory_service.create_block(
        ctx.repos,
        ctx.agent_id,
        "notes",
        word_limit=10,
        content="one two three four five six seven eight nine",
    )
    calls: list[Sequence[str]] = []

    class Recording:
        async def summarize(self, block: str, lines: Sequence[str], word_limit: int) -> list[str]:
            calls.append(lines)
            return list(lines[-1:])

    await memory_service.write_lines(ctx.repos, ctx.agent_id, "notes", ["short"])
    calls.clear()
    untouched = await compaction.compact_block(
        ctx.repos, ctx.search, ctx.agent_id, "notes", Recording()
    )
    assert untouched.archived == ()
    assert calls == []  # no summarizer call for a block that no longer needs one
