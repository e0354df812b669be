"""Export, then import into another user: the same memory answers the same searches, on a
SQLite file and on DynamoDB Local; a second import changes nothing."""

from pathlib import Path

from api.conversations.messages import service as messages
from api.kit.clock import FrozenClock
from api.memory import archival
from api.memory import service as memory
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.transfer import ids, reader
from api.transfer import service as transfer
from api.transfer.writer import Writer
from tests.stored import all_archival
from tests.transfer.conftest import (
    ADA,
    BOB,
    QUESTIONS,
    SUBJECT,
    everything,
    export_bytes,
    make_agent,
    records,
    write,
)


async def test_an_agent_moves_to_another_user_with_all_its_memory(
    repos: Repositories, search: SearchEngine, clock: FrozenClock, tmp_path: Path
) -> None:
    made = await make_agent(repos, search, clock)
    source = made.agent.agent_id
    data = await export_bytes(repos.table, made.agent, clock)
    kinds = [r["type"] for r in records(data)]
    assert kinds[:3] == ["header", "agent", "subject"]
    assert kinds[-1] == "end"
    assert b"sk-" not in data
    assert b"api_key" not in data

    (report,) = await transfer.import_file(repos, search, BOB, write(tmp_path, data))
    assert report.created
    copy = report.agent_id
    assert copy == ids.agent_id(BOB, source) != source
    assert report.written["archival"] == 5
    assert report.written["message"] == 4
    assert report.written["memory_run"] == 1
    assert report.written["subject"] == 1

    # Core memory, limits and capacity state.
    mine = [
        (v.name, v.lines, v.word_limit, v.char_limit)
        for v in await memory.list_blocks(repos, source)
    ]
    theirs = [
        (v.name, v.lines, v.word_limit, v.char_limit) for v in await memory.list_blocks(repos, copy)
    ]
    assert theirs == mine
    assert (await repos.memory.blocks_and_warnings(copy))[1] == {"projects": 1}

    # Archival memory: the same memories answer the same questions, in the same order.
    # The source's index grew by inserts (scored with its first load's word statistics
    # until a rebuild); the copy's is built whole, so compare with the source built whole.
    search.forget(source)
    for question in QUESTIONS:
        before = await archival.search(search, source, question)
        after = await archival.search(search, copy, question)
        assert before.total > 0
        assert [
            (m.memory_id, m.content, m.category, m.context, m.confidence, m.tags)
            for m in after.memories
        ] == [
            (m.memory_id, m.content, m.category, m.context, m.confidence, m.tags)
            for m in before.memories
        ]
    # The vectors came with the file: nothing was embedded again.
    assert report.written["embedded"] == 0

    # Conversations: the messages, their actors, tool calls and expiry; searchable.
    conversation_id = ids.conversation_id(BOB, source, made.conversation_id)
    old, _ = await repos.messages.oldest_first(made.conversation_id, limit=50, cursor=None)
    new, _ = await repos.messages.oldest_first(conversation_id, limit=50, cursor=None)
    assert [m.model_dump(exclude={"conversation_id"}) for m in new] == [
        m.model_dump(exclude={"conversation_id"}) for m in old
    ]
    found = await messages.search(repos, search, BOB, copy, "usual tea")
    assert [h.message_id for h in found.hits] == [
        h.message_id for h in (await messages.search(repos, search, ADA, source, "usual tea")).hits
    ]

    # Seed 004: Bob's subject names the copy; the run's history came along, under the copy.
    subject = await repos.subjects.get(BOB, SUBJECT)
    assert subject is not None
    assert subject.agent_id == copy
    run = await repos.memory_runs.get(copy, ids.run_id(copy, made.run_id))
    assert run is not None
    assert run.result == "Updated summary."
    assert run.user_email == BOB

    # And Ada's agent is untouched, still hers alone.
    assert await repos.subjects.get(ADA, SUBJECT) is not None


async def test_importing_the_same_file_twice_changes_nothing(
    repos: Repositories, search: SearchEngine, clock: FrozenClock, tmp_path: Path
) -> None:
    made = await make_agent(repos, search, clock)
    path = write(tmp_path, await export_bytes(repos.table, made.agent, clock))
    (first,) = await transfer.import_file(repos, search, BOB, path)
    before = await everything(repos.table)
    (again,) = await transfer.import_file(repos, search, BOB, path)
    assert await everything(repos.table) == before
    assert again.agent_id == first.agent_id
    assert not again.created
    assert sum(again.written.values()) == 0
    skipped = {(s.kind, s.reason): s.count for s in again.skipped.values()}
    assert skipped[("archival", "the same text is stored already")] == 5
    assert skipped[("message", "imported before")] == 4


async def test_an_import_cut_short_is_completed_by_importing_again(
    repos: Repositories, search: SearchEngine, clock: FrozenClock, tmp_path: Path
) -> None:
    """An import that stopped half way (a crash) leaves what it wrote; the same file again
    writes the rest, and the result is the same as one whole import."""
    made = await make_agent(repos, search, clock)
    data = await export_bytes(repos.table, made.agent, clock)
    path = write(tmp_path, data)
    # Write the first half only, as a process that died would have.
    plan = reader.check_file(path)
    writer = Writer(repos, search, BOB, plan.header.source_agent_id)
    file = reader.RecordFile(path)
    for record in file.next_batch(plan.records // 2):
        await writer.add(record)
    file.close()
    (report,) = await transfer.import_file(repos, search, BOB, path)
    assert not report.created  # the agent was written by the first, cut-short attempt
    copy = report.agent_id
    assert len(await all_archival(repos.memory, copy)) == 5
    found = await archival.search(search, copy, "cat")
    assert "Ada's cat is called Turing." in [m.content for m in found.memories]


async def test_a_file_without_vectors_is_embedded_on_import(
    repos: Repositories, search: SearchEngine, clock: FrozenClock, tmp_path: Path
) -> None:
    made = await make_agent(repos, search, clock)
    data = await export_bytes(repos.table, made.agent, clock, with_vectors=False)
    assert b'"vector"' not in data
    (report,) = await transfer.import_file(repos, search, BOB, write(tmp_path, data))
    assert report.written["embedded"] == 5
    # Embedded by the same model as the source's: semantic search ranks them alike.
    for question in QUESTIONS:
        before = await archival.search(search, made.agent.agent_id, question, mode="semantic")
        after = await archival.search(search, report.agent_id, question, mode="semantic")
        assert before.total > 0
        assert [m.memory_id for m in after.memories] == [m.memory_id for m in before.memories]
