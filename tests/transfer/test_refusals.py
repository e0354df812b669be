"""Files that cannot be imported whole are refused before anything is written, with the
line and what is wrong: cut short, changed after export, out of order, or holding what the
memory rules refuse."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.transfer import service as transfer
from api.transfer.errors import InvalidImportFile
from api.transfer.format import VERSION
from tests.transfer.conftest import (
    BOB,
    everything,
    export_bytes,
    make_agent,
    records,
    reframed,
    write,
)


@pytest.fixture
async def exported(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, clock: FrozenClock
) -> bytes:
    made = await make_agent(repos_sqlite, search_sqlite, clock)
    return await export_bytes(repos_sqlite.table, made.agent, clock)


async def refused(repos: Repositories, search: SearchEngine, tmp_path: Path, data: bytes) -> str:
    """The import's error message; and the store exactly as it was."""
    before = await everything(repos.table)
    with pytest.raises(InvalidImportFile) as refusal:
        await transfer.import_file(repos, search, BOB, write(tmp_path, data, "bad.jsonl"))
    assert refusal.value.status_code == 400
    assert refusal.value.code == "invalid_import_file"
    assert await everything(repos.table) == before
    assert refusal.value.message.endswith("Nothing was imported.")
    return refusal.value.message


async def test_a_file_cut_short_is_refused(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, exported: bytes, tmp_path: Path
) -> None:
    lines = exported.splitlines(keepends=True)
    at_a_line = b"".join(lines[:-3])
    message = await refused(repos_sqlite, search_sqlite, tmp_path, at_a_line)
    assert "without its trailer line: it was cut short" in message
    mid_line = exported[: len(exported) // 2]
    assert "Line" in await refused(repos_sqlite, search_sqlite, tmp_path, mid_line)  # a half record


async def test_a_file_changed_after_export_is_refused(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, exported: bytes, tmp_path: Path
) -> None:
    tampered = exported.replace(b"Name is Ada Lovelace", b"Name is Eve Lovelace")
    assert tampered != exported
    message = await refused(repos_sqlite, search_sqlite, tmp_path, tampered)
    assert "does not match the digest in its trailer" in message
    *body, last = exported.splitlines(keepends=True)
    trailer = json.loads(last)
    trailer["counts"]["archival"] = 4  # the trailer itself, changed: the body is intact
    forged = b"".join(body) + json.dumps(trailer).encode() + b"\n"
    assert "record counts do not match" in await refused(
        repos_sqlite, search_sqlite, tmp_path, forged
    )


async def test_a_file_of_a_newer_format_or_another_kind_is_refused(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, exported: bytes, tmp_path: Path
) -> None:
    lines = records(exported)
    lines[0]["version"] = VERSION + 1
    message = await refused(repos_sqlite, search_sqlite, tmp_path, reframed(lines))
    assert f"version {VERSION + 1} of the format, made by a newer server" in message
    assert "neither an agent-memory export nor a Letta" in await refused(
        repos_sqlite, search_sqlite, tmp_path, b"hello, world\n"
    )
    legacy = json.dumps({"agent_type": "memgpt_agent", "core_memory": [], "messages": []})
    assert "old layout" in await refused(repos_sqlite, search_sqlite, tmp_path, legacy.encode())
    assert "holds no agent" in await refused(
        repos_sqlite, search_sqlite, tmp_path, b'{"agents": []}'
    )
    assert "Not a Letta agent file" in await refused(
        repos_sqlite, search_sqlite, tmp_path, b'{"agents": 3}'
    )
    lines = records(exported)
    lines[0]["format"] = "something-else"
    assert "not an agent-memory-export file" in await refused(
        repos_sqlite, search_sqlite, tmp_path, reframed(lines)
    )


def _first(kind: str) -> Callable[[list[dict[str, Any]]], dict[str, Any]]:
    def pick(lines: list[dict[str, Any]]) -> dict[str, Any]:
        return next(r for r in lines if r["type"] == kind)

    return pick


def _set(kind: str, **changes: Any) -> Callable[[list[dict[str, Any]]], None]:
    def change(lines: list[dict[str, Any]]) -> None:
        _first(kind)(lines).update(changes)

    return change


def _move_first(kind: str, to: int) -> Callable[[list[dict[str, Any]]], None]:
    def change(lines: list[dict[str, Any]]) -> None:
        record = _first(kind)(lines)
        lines.remove(record)
        lines.insert(to, record)

    return change


def _duplicate(kind: str) -> Callable[[list[dict[str, Any]]], None]:
    def change(lines: list[dict[str, Any]]) -> None:
        record = _first(kind)(lines)
        lines.insert(lines.index(record), dict(record))

    return change


BROKEN: dict[str, tuple[Callable[[list[dict[str, Any]]], None], str]] = {
    "unknown field": (_set("agent", secret="x"), "Extra inputs are not permitted"),
    "unknown type": (_set("block", type="plugin"), "Not a record of this format"),
    "agent not first": (_move_first("block", 1), "comes before the agent's record"),
    "two agents": (_duplicate("agent"), "this is a second"),
    "two subjects": (_duplicate("subject"), "one subject at most"),
    "bad block name": (_set("block", name="Not A Name"), "is not a block name"),
    "block twice": (_duplicate("block"), "comes twice"),
    "word limit": (_set("block", word_limit=10**6), "A word limit is at most"),
    "char limit": (_set("block", char_limit=10**7), "A character limit is at most"),
    "unclean line": (_set("block", lines=["two\nlines"]), "not one clean line"),
    "long line": (_set("block", lines=["x" * 2001]), "over 2000 chars"),
    "warning of no block": (
        _set("capacity_warning", block="nowhere"),
        "capacity warning of block 'nowhere'",
    ),
    "memory id": (_set("archival", memory_id="abc"), "is not an archival memory's id"),
    # An id of the right shape whose time is not the memory's (2054, for a memory of
    # today): it would have dated the memory 2054 to the model and to ranking.
    "memory id of another time": (
        _set("archival", memory_id="97a3f243e800025b31fdc8f9047a09e5"),
        "the id was not made for it",
    ),
    "hash": (_set("archival", content="changed text"), "hash does not match its content"),
    "too long": (_set("archival", content="x" * 50_001), "holds at most 50000 chars"),
    "vector base64": (
        _set("archival", vector={"model": "m", "dim": 2, "data": "!!"}),
        "not base64",
    ),
    "vector size": (
        _set("archival", vector={"model": "m", "dim": 3, "data": "AAAA"}),
        "does not hold 3 values",
    ),
    "conversation twice": (_duplicate("conversation"), "comes twice"),
    "orphan message": (
        _set("message", conversation_id="elsewhere"),
        "does not follow that conversation's record",
    ),
    "run of no conversation": (
        _set("memory_run", conversation_id="elsewhere"),
        "names an unknown conversation",
    ),
    "run id": (_set("memory_run", run_id="job-1"), "is not a memory run's id"),
    "second header": (_duplicate("header"), "A second header line"),
    "metadata a store refuses": (_set("agent", metadata={"deep": {"": 1}}), "metadata"),
    "tool call a store refuses": (
        _set("message", tool_calls=[{"id": "c", "arguments": {"": 1}}]),
        "keys may not be empty",
    ),
}


@pytest.mark.parametrize("case", BROKEN, ids=list(BROKEN))
async def test_a_record_the_store_could_not_hold_whole_is_refused(
    repos_sqlite: Repositories,
    search_sqlite: SearchEngine,
    exported: bytes,
    tmp_path: Path,
    case: str,
) -> None:
    change, expected = BROKEN[case]
    lines = records(exported)
    change(lines)
    if case == "second header":  # a header moved into the body: put the real one first
        lines.insert(0, lines.pop(1))
    message = await refused(repos_sqlite, search_sqlite, tmp_path, reframed(lines))
    assert expected in message
    assert message.startswith("Line ")


async def test_lines_after_the_trailer_and_huge_lines_are_refused(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, exported: bytes, tmp_path: Path
) -> None:
    extra = exported + b'{"type": "agent"}\n'
    assert "more after the trailer" in await refused(repos_sqlite, search_sqlite, tmp_path, extra)
    huge = exported.replace(b"\n", b"\n" + b" " * (4 * 1024 * 1024 + 1) + b"\n", 1)
    assert "longer than" in await refused(repos_sqlite, search_sqlite, tmp_path, huge)


async def test_a_file_with_no_agent_is_refused(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, exported: bytes, tmp_path: Path
) -> None:
    lines = records(exported)
    only_header = [lines[0], lines[-1]]
    assert "holds no agent" in await refused(
        repos_sqlite, search_sqlite, tmp_path, reframed(only_header)
    )


async def test_a_line_nested_too_deeply_is_refused_with_its_line(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, exported: bytes, tmp_path: Path
) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    lines = exported.splitlines(keepends=True)
    message = await refused(repos_sqlite, search_sqlite, tmp_path, deep + b"".join(lines[1:]))
    assert message.startswith("Line 1: ")
    assert "nested too deeply" in message
    message = await refused(
        repos_sqlite, search_sqlite, tmp_path, b"".join([lines[0], deep, *lines[1:]])
    )
    assert message.startswith("Line 2: ")
    # A Letta agent file is one JSON document.
    letta = b'{"agents": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert "nested too deeply" in await refused(repos_sqlite, search_sqlite, tmp_path, letta)
