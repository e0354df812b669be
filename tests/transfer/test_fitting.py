"""What an import changes to fit the caller's tenant, and what it skips, each with its
reason in the report."""

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from api.agents import service as agents_service
from api.agents.schemas import AgentCreate
from api.agents.service import AgentNameTaken
from api.kit.clock import FrozenClock
from api.memory import repository as memory_repository
from api.repositories import Repositories
from api.runtime.architectures.registry import ARCHITECTURES
from api.search.engine import SearchEngine
from api.subjects import service as subjects
from api.transfer import ids, reader
from api.transfer import service as transfer
from api.transfer.writer import ARCHIVAL_BATCH, Writer
from tests.stored import all_archival
from tests.transfer.conftest import (
    BOB,
    SUBJECT,
    export_bytes,
    make_agent,
    records,
    reframed,
    write,
)


def _skipped(report: Any) -> dict[tuple[str, str], int]:
    return {(s.kind, s.reason): s.count for s in report.skipped.values()}


async def test_what_cannot_come_along_is_skipped_with_its_reason(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, clock: FrozenClock, tmp_path: Path
) -> None:
    made = await make_agent(repos_sqlite, search_sqlite, clock)
    lines = records(await export_bytes(repos_sqlite.table, made.agent, clock))
    agent = next(r for r in lines if r["type"] == "agent")
    agent.update(architecture="someone-elses", provider="openai", model="gpt-4o")
    message = next(r for r in lines if r["type"] == "message")
    message["ttl"] = int(clock.now()) - 1  # expired by now
    run = next(r for r in lines if r["type"] == "memory_run")
    unfinished = {**run, "run_id": run["run_id"] + "x", "state": "running"}
    lines.insert(lines.index(run) + 1, unfinished)
    # Bob already uses the name, and the subject's user_id for an agent of his own.
    await subjects.open_subject(
        repos_sqlite, BOB, SUBJECT, clock, provider="offline", model="offline-demo"
    )
    bobs = await repos_sqlite.agents.list_for(BOB)
    bobs_name = bobs[0].agent_name
    assert bobs_name == agent["name"]

    (report,) = await transfer.import_file(
        repos_sqlite, search_sqlite, BOB, write(tmp_path, reframed(lines))
    )
    copy = await repos_sqlite.agents.get(BOB, report.agent_id)
    assert copy is not None
    assert copy.agent_name == f"{bobs_name} (imported)"
    assert copy.agent_architecture == "krishna-memgpt"
    assert (copy.agent_provider, copy.agent_model) == ("offline", "offline-demo")
    assert "memory_subject" not in copy.metadata  # it is nobody's memory here
    assert len(report.notes) == 3
    skipped = _skipped(report)
    assert skipped[("message", "expired (its agent's event expiry)")] == 1
    assert report.written["message"] == 3
    reason = (
        f"your user_id {SUBJECT!r} already names another agent; its memory runs are not "
        "imported either"
    )
    assert skipped[("subject", reason)] == 1
    assert skipped[("memory_run", "the agent's subject was not imported")] == 2
    assert (
        await repos_sqlite.memory_runs.get(copy.agent_id, ids.run_id(copy.agent_id, run["run_id"]))
        is None
    )


async def test_an_unfinished_run_is_not_run_again(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, clock: FrozenClock, tmp_path: Path
) -> None:
    made = await make_agent(repos_sqlite, search_sqlite, clock)
    lines = records(await export_bytes(repos_sqlite.table, made.agent, clock))
    run = next(r for r in lines if r["type"] == "memory_run")
    run["state"] = "queued"
    (report,) = await transfer.import_file(
        repos_sqlite, search_sqlite, BOB, write(tmp_path, reframed(lines))
    )
    skipped = _skipped(report)
    assert skipped[("memory_run", "it had not ended when exported: it is not run again")] == 1
    assert await repos_sqlite.memory_runs.all_unfinished(report.agent_id) == []


async def test_one_text_twice_in_a_file_is_stored_once(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, clock: FrozenClock, tmp_path: Path
) -> None:
    """A file written by hand may hold one text under two ids, batches apart: the second
    is refused by the text's hash guard, and the rest of its batch still written."""
    made = await make_agent(repos_sqlite, search_sqlite, clock)
    lines = records(await export_bytes(repos_sqlite.table, made.agent, clock))
    agent_at = next(i for i, r in enumerate(lines) if r["type"] == "agent")
    start = datetime(2024, 1, 1, tzinfo=UTC)

    def archival(n: int, text: str) -> dict[str, Any]:
        created = start + timedelta(seconds=n)
        return {
            "type": "archival",
            "memory_id": memory_repository.new_memory_id(created),
            "content": text,
            "content_hash": hashlib.sha256(text.encode()).hexdigest(),
            "created_at": created.isoformat(),
        }

    extra = [archival(n, f"note {n}") for n in range(ARCHIVAL_BATCH)]
    extra += [archival(ARCHIVAL_BATCH, "note 0"), archival(ARCHIVAL_BATCH + 1, "last note")]
    blocks_end = max(i for i, r in enumerate(lines) if r["type"] in ("block", "capacity_warning"))
    assert blocks_end > agent_at
    lines[blocks_end + 1 : blocks_end + 1] = extra
    (report,) = await transfer.import_file(
        repos_sqlite, search_sqlite, BOB, write(tmp_path, reframed(lines))
    )
    assert _skipped(report)[("archival", "the same text is stored already")] == 1
    stored = await all_archival(repos_sqlite.memory, report.agent_id)
    contents = [m.content for m in stored]
    assert contents.count("note 0") == 1
    assert "last note" in contents
    assert len(stored) == 5 + ARCHIVAL_BATCH + 1


async def test_messages_of_a_conversation_deleted_meanwhile_are_skipped(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, clock: FrozenClock, tmp_path: Path
) -> None:
    made = await make_agent(repos_sqlite, search_sqlite, clock)
    path = write(tmp_path, await export_bytes(repos_sqlite.table, made.agent, clock))
    plan = reader.check_file(path)
    writer = Writer(repos_sqlite, search_sqlite, BOB, plan.header.source_agent_id)
    file = reader.RecordFile(path)
    batch = file.next_batch(plan.records)
    file.close()
    for record in batch:
        if record.type == "message":
            # The user deletes the conversation while its messages are being imported.
            conversation = await repos_sqlite.conversations.get(
                BOB,
                ids.conversation_id(BOB, plan.header.source_agent_id, made.conversation_id),
            )
            assert conversation is not None
            await repos_sqlite.conversations.mark_deleting(conversation)
        await writer.add(record)
    report = await writer.finish()
    reason = ("message", "their conversation was deleted or changed during the import")
    assert _skipped(report)[reason] == 4
    assert "message" not in report.written


async def test_every_name_taken_is_a_409(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, clock: FrozenClock, tmp_path: Path
) -> None:
    made = await make_agent(repos_sqlite, search_sqlite, clock)
    path = write(tmp_path, await export_bytes(repos_sqlite.table, made.agent, clock))
    name = made.agent.agent_name
    taken = [name, f"{name} (imported)"] + [f"{name} (imported {n})" for n in range(2, 20)]
    for each in taken:
        await agents_service.create(
            repos_sqlite, BOB, AgentCreate(name=each), clock, architectures=ARCHITECTURES
        )
    with pytest.raises(AgentNameTaken) as refusal:
        await transfer.import_file(repos_sqlite, search_sqlite, BOB, path)
    assert refusal.value.status_code == 409
    assert "rename one" in refusal.value.message
    assert len(await repos_sqlite.agents.list_for(BOB)) == len(taken)
