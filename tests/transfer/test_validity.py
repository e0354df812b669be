"""Export and import carry validity over HTTP: each memory's `valid_from`, `superseded_at`
and `superseded_by`, and the agent's `auto_supersede`; the imported agent's search answers
now by default and then on request, as the source's did. A file from before validity
imports with every memory current and the setting on."""

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.memory import archival
from api.memory.models import ArchivalMemory
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.transfer import reader, writer
from api.transfer import service as transfer
from api.transfer.format import VERSION
from tests.runtime.conftest import running
from tests.stored import all_archival
from tests.transfer.conftest import (
    BOB,
    FACTS,
    everything,
    export_bytes,
    make_agent,
    records,
    reframed,
    write,
)

VALIDITY = ("valid_from", "superseded_at", "superseded_by")
CY = "cy@example.com"


@pytest.fixture
def api(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    settings = Settings(
        sqlite_path=tmp_path / "app.db", encryption_key="k" * 40, memory_embedding_backend="none"
    )
    with running(settings, clock) as client:
        yield client


def store(
    client: TestClient, agent: str, content: str, status: int = 201, **fields: Any
) -> dict[str, Any]:
    stored = client.post(f"/agents/{agent}/memory/archival", json={"content": content, **fields})
    assert stored.status_code == status, stored.text
    found: dict[str, Any] = stored.json()
    return found


def memories(client: TestClient, agent: str) -> dict[str, dict[str, Any]]:
    listed = client.get(f"/agents/{agent}/memory/archival", params={"limit": 100})
    assert listed.status_code == 200, listed.text
    return {m["id"]: m for m in listed.json()["memories"]}


def found(client: TestClient, agent: str, query: str, **params: Any) -> list[str]:
    searched = client.get(
        f"/agents/{agent}/memory/archival/search", params={"query": query, "limit": 20, **params}
    )
    assert searched.status_code == 200, searched.text
    return [m["content"] for m in searched.json()["memories"]]


def import_file(client: TestClient, data: bytes, status: int) -> dict[str, Any]:
    imported = client.post(
        "/agents/import", content=data, headers={"Content-Type": "application/x-ndjson"}
    )
    assert imported.status_code == status, imported.text
    (report,) = imported.json()["agents"]
    result: dict[str, Any] = report
    return result


def history_agent(client: TestClient) -> tuple[str, dict[str, str]]:
    """An agent (automatic supersession off) whose facts changed: a move, with dates; a job
    left and taken again (one text stored twice, the first replaced); a memory with a date
    of its own. Its id, and the ids of its memories by name."""
    made = client.post("/agents", json={"name": "Historian", "auto_supersede": False})
    assert made.status_code == 201, made.text
    agent = made.json()["id"]
    ids: dict[str, str] = {}
    ids["lisbon"] = store(client, agent, "Lives in: Lisbon", valid_from="2019-05-01")["id"]
    porto = store(
        client, agent, "Lives in: Porto", valid_from="2025-03-02", supersedes=[ids["lisbon"]]
    )
    assert [m["id"] for m in porto["replaced"]] == [ids["lisbon"]]
    ids["porto"] = porto["id"]
    ids["cat"] = store(client, agent, "Ada's cat is called Turing.", valid_from="2020-01-01")["id"]
    ids["acme"] = store(client, agent, "Works at: Acme", valid_from="2018-01-01")["id"]
    ids["initech"] = store(
        client, agent, "Works at: Initech", valid_from="2021-01-01", supersedes=[ids["acme"]]
    )["id"]
    again = store(
        client, agent, "Works at: Acme", valid_from="2023-01-01", supersedes=[ids["initech"]]
    )
    assert again["id"] != ids["acme"]  # the fact true again: a memory of its own
    ids["acme_again"] = again["id"]
    return agent, ids


def test_validity_and_supersession_survive_export_and_import(api: TestClient) -> None:
    source, ids = history_agent(api)
    before = memories(api, source)
    assert before[ids["lisbon"]]["superseded_by"] == ids["porto"]
    assert before[ids["acme"]]["superseded_by"] == ids["initech"]
    assert before[ids["initech"]]["superseded_by"] == ids["acme_again"]

    exported = api.get(f"/agents/{source}/export")
    assert exported.status_code == 200, exported.text
    lines = records(exported.content)
    assert lines[0]["version"] == VERSION == 3
    (agent_record,) = [r for r in lines if r["type"] == "agent"]
    assert agent_record["auto_supersede"] is False
    by_id = {r["memory_id"]: r for r in lines if r["type"] == "archival"}
    assert by_id.keys() == before.keys()
    lisbon = by_id[ids["lisbon"]]
    assert lisbon["valid_from"].startswith("2019-05-01")
    assert lisbon["superseded_at"].startswith("2025-03-02")
    assert lisbon["superseded_by"] == ids["porto"]
    assert by_id[ids["cat"]]["valid_from"].startswith("2020-01-01")
    assert "superseded_by" not in by_id[ids["cat"]]  # current: left out, as None is

    report = import_file(api, exported.content, 201)
    copy = report["agent_id"]
    assert copy != source
    assert report["written"]["archival"] == len(before) == 6
    assert report["skipped"] == []

    # Every memory as it was: its dates, its end and what replaced it (ids are kept).
    after = memories(api, copy)
    assert {i: [m[f] for f in ("content", "created_at", *VALIDITY)] for i, m in after.items()} == {
        i: [m[f] for f in ("content", "created_at", *VALIDITY)] for i, m in before.items()
    }
    agent = api.get(f"/agents/{copy}")
    assert agent.status_code == 200, agent.text
    assert agent.json()["auto_supersede"] is False

    # Search answers now by default, and then with include_history or as_of.
    for agent_id in (source, copy):
        assert found(api, agent_id, "Lives in") == ["Lives in: Porto"]
        assert sorted(found(api, agent_id, "Lives in", include_history=True)) == [
            "Lives in: Lisbon",
            "Lives in: Porto",
        ]
        assert found(api, agent_id, "Lives in", as_of="2020-06-01") == ["Lives in: Lisbon"]
        assert found(api, agent_id, "Works at") == ["Works at: Acme"]
        assert found(api, agent_id, "Works at", as_of="2022-01-01") == ["Works at: Initech"]
        assert sorted(found(api, agent_id, "Works at", include_history=True)) == [
            "Works at: Acme",
            "Works at: Acme",
            "Works at: Initech",
        ]
        assert found(api, agent_id, "cat Turing", as_of="2019-06-01") == []
        assert found(api, agent_id, "cat Turing", as_of="2020-06-01") == [
            "Ada's cat is called Turing."
        ]

    # The imported memories take part in supersession as any other: the text true now is
    # found again as stored, and a current memory is replaced once.
    acme = store(api, copy, "works at:  ACME", status=200)
    assert acme["id"] == ids["acme_again"]
    braga = store(api, copy, "Lives in: Braga", supersedes=[ids["porto"]])
    assert [m["id"] for m in braga["replaced"]] == [ids["porto"]]
    late = store(api, copy, "Lives in: Faro", supersedes=[ids["lisbon"]])
    assert late["replaced"] == []
    assert [m["superseded_by"] for m in late["not_replaced"]] == [ids["porto"]]

    # Imported again: nothing written, nothing changed.
    again = import_file(api, exported.content, 200)
    assert again["agent_id"] == copy
    assert "archival" not in again["written"]
    assert sum(s["count"] for s in again["skipped"] if s["kind"] == "archival") == 6
    assert len(memories(api, copy)) == 6 + 2


def test_a_file_from_before_validity_imports_every_memory_as_current(
    api: TestClient,
) -> None:
    made = api.post("/agents", json={"name": "Helper"})
    assert made.status_code == 201, made.text
    source = made.json()["id"]
    for content, *_ in FACTS:
        store(api, source, content)
    lines = records(api.get(f"/agents/{source}/export").content)
    # As servers wrote files before validity: version 1, none of its fields.
    lines[0]["version"] = 1
    for record in lines:
        if record["type"] == "agent":
            del record["auto_supersede"]
        for name in VALIDITY:
            record.pop(name, None)
    old_file = reframed(lines)
    assert b"valid_from" not in old_file
    assert b"auto_supersede" not in old_file

    report = import_file(api, old_file, 201)
    copy = report["agent_id"]
    assert report["written"]["archival"] == len(FACTS)
    imported = memories(api, copy)
    assert len(imported) == len(FACTS)
    for memory in imported.values():
        assert memory["valid_from"] == memory["created_at"]  # true since it was stored
        assert memory["superseded_at"] is None
        assert memory["superseded_by"] is None
    assert api.get(f"/agents/{copy}").json()["auto_supersede"] is True
    assert found(api, copy, "cat") == ["Ada's cat is called Turing."]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"superseded_by": "later"}, "gives one of superseded_at and superseded_by"),
        ({"superseded_at": "2025-01-01T00:00:00Z"}, "gives one of superseded_at"),
        (
            {"superseded_at": "2025-01-01T00:00:00Z", "superseded_by": "not-an-id"},
            "is superseded by 'not-an-id', no memory",
        ),
        ({"valid_from": "not a date"}, "valid_from"),
    ],
)
def test_a_validity_that_makes_no_sense_is_refused(
    api: TestClient, change: dict[str, str], problem: str
) -> None:
    made = api.post("/agents", json={"name": "Helper"})
    source = made.json()["id"]
    store(api, source, "Lives in: Lisbon")
    lines = records(api.get(f"/agents/{source}/export").content)
    (memory,) = [r for r in lines if r["type"] == "archival"]
    memory.update(change)
    refused = api.post("/agents/import", content=reframed(lines))
    assert refused.status_code == 400, refused.text
    assert refused.json()["code"] == "invalid_import_file"
    assert problem in refused.json()["message"]
    assert [a["name"] for a in api.get("/agents").json()] == ["Helper"]  # nothing written


async def history_in_process(
    repos: Repositories, search: SearchEngine, clock: FrozenClock, agent_id: str, step: float
) -> dict[str, str]:
    """The changes of `history_agent`, through the engine itself, `step` seconds apart on
    the clock (negative: the file lists them newest first, as a server whose clock went
    back would have stored them)."""
    ids: dict[str, str] = {}

    async def put(name: str, content: str, day: str, *replaced: str) -> None:
        clock.advance(step)
        valid_from = datetime.fromisoformat(f"{day}T00:00:00+00:00")
        supersedes = [ids[r] for r in replaced]
        stored = await archival.insert(
            repos, search, agent_id, content, valid_from=valid_from, supersedes=supersedes
        )
        assert stored.created
        ids[name] = stored.memory.memory_id

    await put("acme", "Works at: Acme", "2018-01-01")
    await put("lisbon", "Lives in: Lisbon", "2019-05-01")
    await put("initech", "Works at: Initech", "2021-01-01", "acme")
    await put("acme_again", "Works at: Acme", "2023-01-01", "initech")
    await put("porto", "Lives in: Porto", "2025-03-02", "lisbon")
    clock.advance(5 * abs(step))
    return ids


@pytest.mark.parametrize("step", [1.0, -1.0], ids=["oldest_first", "newest_first"])
@pytest.mark.parametrize("batch", [1, 2, writer.ARCHIVAL_BATCH])
async def test_a_text_true_again_imports_beside_its_history_in_any_batches(
    repos: Repositories,
    search: SearchEngine,
    clock: FrozenClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    batch: int,
    step: float,
) -> None:
    """On SQLite and DynamoDB Local, with the file's memories written one, two or all to a
    transaction, in either order: every memory of a text stated, replaced and stated again
    is imported, and its text's guard names the current one (so the text said again is
    found, not stored anew). An import cut short and completed, and an import again, end
    the same."""
    monkeypatch.setattr(writer, "ARCHIVAL_BATCH", batch)
    made = await make_agent(repos, search, clock)
    source = made.agent.agent_id
    ids = await history_in_process(repos, search, clock, source, step)
    data = await export_bytes(repos.table, made.agent, clock)
    path = write(tmp_path, data)
    lines = records(data)[1:]
    history = [i for i, r in enumerate(lines) if r.get("memory_id") in ids.values()]
    assert len(history) == 5
    by_file = [r["memory_id"] for r in lines if r.get("memory_id") in ids.values()]
    assert (by_file.index(ids["acme"]) < by_file.index(ids["acme_again"])) == (step > 0)

    # The records up to the middle of the history, as a process that died would have
    # written them; then the whole file.
    plan = reader.check_file(path)
    half = writer.Writer(repos, search, BOB, plan.header.source_agent_id)
    file = reader.RecordFile(path)
    for record in file.next_batch(history[2] + 1):
        await half.add(record)
    file.close()
    (report,) = await transfer.import_file(repos, search, BOB, path)
    copy = report.agent_id

    def validity(memories: list[ArchivalMemory]) -> list[tuple[Any, ...]]:
        fields = ("memory_id", "content", "created_at", *VALIDITY)
        return sorted(tuple(getattr(m, f) for f in fields) for m in memories)

    # And the whole file at once, by another user: the agent made by this import.
    (whole,) = await transfer.import_file(repos, search, CY, path)
    assert whole.created
    assert whole.written["archival"] == len(FACTS) + 5

    mine = await all_archival(repos.memory, source)
    for agent_id in (copy, whole.agent_id):
        theirs = await all_archival(repos.memory, agent_id)
        assert len(theirs) == len(FACTS) + 5
        assert validity(theirs) == validity(mine)
        acme = await archival.insert(repos, search, agent_id, "works at:  acme")
        assert (acme.created, acme.memory.memory_id) == (False, ids["acme_again"])

    acme = await archival.insert(repos, search, copy, "Works at: Acme")
    assert not acme.created
    assert acme.memory.memory_id == ids["acme_again"]

    async def jobs(**options: Any) -> list[str]:
        found = await archival.search(search, copy, "Works at", mode="lexical", **options)
        return sorted(m.memory_id for m in found.memories if m.content.startswith("Works at:"))

    assert await jobs() == [ids["acme_again"]]
    assert await jobs(include_history=True) == sorted(
        ids[n] for n in ("acme", "initech", "acme_again")
    )
    assert await jobs(as_of=datetime(2022, 1, 1, tzinfo=UTC)) == [ids["initech"]]

    before = await everything(repos.table)
    (again,) = await transfer.import_file(repos, search, BOB, path)
    assert await everything(repos.table) == before
    assert sum(again.written.values()) == 0
