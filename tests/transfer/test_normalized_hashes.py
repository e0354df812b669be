"""Export and import over HTTP with archival hashes of normalized texts: a file from before
(hashes of the texts as written) still imports, its memories keyed anew, so a text said
again in other case or spacing is found; a file holding one text twice stores it once."""

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.memory import archival
from tests.runtime.conftest import running
from tests.transfer.conftest import FACTS, records, reframed

CAT = "Ada's cat is called Turing."


@pytest.fixture
def api(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    settings = Settings(
        sqlite_path=tmp_path / "app.db", encryption_key="k" * 40, memory_embedding_backend="none"
    )
    with running(settings, clock) as client:
        yield client


def exported_lines(client: TestClient) -> list[dict[str, Any]]:
    made = client.post("/agents", json={"name": "Helper"})
    assert made.status_code == 201, made.text
    agent = made.json()["id"]
    for content, *_ in FACTS:
        stored = client.post(f"/agents/{agent}/memory/archival", json={"content": content})
        assert stored.status_code == 201, stored.text
    exported = client.get(f"/agents/{agent}/export")
    assert exported.status_code == 200, exported.text
    return records(exported.content)


def archival_of(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in lines if r["type"] == "archival"]


def import_file(client: TestClient, data: bytes, status: int) -> dict[str, Any]:
    imported = client.post(
        "/agents/import", content=data, headers={"Content-Type": "application/x-ndjson"}
    )
    assert imported.status_code == status, imported.text
    (report,) = imported.json()["agents"]
    found: dict[str, Any] = report
    return found


def memories(client: TestClient, agent: str) -> list[dict[str, Any]]:
    listed = client.get(f"/agents/{agent}/memory/archival", params={"limit": 100})
    assert listed.status_code == 200, listed.text
    found: list[dict[str, Any]] = listed.json()["memories"]
    return found


def test_an_export_carries_hashes_of_normalized_texts(api: TestClient) -> None:
    stored = archival_of(exported_lines(api))
    assert len(stored) == len(FACTS)
    for record in stored:
        normalized = archival.normalized(record["content"])
        assert record["content_hash"] == hashlib.sha256(normalized.encode()).hexdigest()
        assert record["content_hash"] != hashlib.sha256(record["content"].encode()).hexdigest()


def test_a_file_from_before_imports_and_its_memories_are_keyed_anew(api: TestClient) -> None:
    lines = exported_lines(api)
    for record in archival_of(lines):  # as servers exported them before normalization
        record["content_hash"] = hashlib.sha256(record["content"].encode()).hexdigest()
    old_file = reframed(lines)

    report = import_file(api, old_file, 201)
    assert report["written"]["archival"] == len(FACTS)
    copy = report["agent_id"]
    assert {m["content_hash"] for m in memories(api, copy)} == {
        archival.content_hash(content) for content, *_ in FACTS
    }
    # The imported memory is found again by its text in other case and spacing.
    again = api.post(f"/agents/{copy}/memory/archival", json={"content": f"  {CAT.upper()} "})
    assert again.status_code == 200, again.text
    assert again.json()["content"] == CAT
    assert len(memories(api, copy)) == len(FACTS)

    # Imported again: nothing written, every memory reported as stored already.
    report = import_file(api, old_file, 200)
    assert report["agent_id"] == copy
    assert "archival" not in report["written"]
    (skipped,) = [s for s in report["skipped"] if s["kind"] == "archival"]
    assert (skipped["reason"], skipped["count"]) == (
        "the same text is stored already",
        len(FACTS),
    )


def test_a_hash_of_neither_kind_is_refused(api: TestClient) -> None:
    lines = exported_lines(api)
    first, second = archival_of(lines)[:2]
    first["content_hash"] = second["content_hash"]
    refused = api.post("/agents/import", content=reframed(lines))
    assert refused.status_code == 400, refused.text
    assert refused.json()["code"] == "invalid_import_file"
    assert "hash does not match its content" in refused.json()["message"]
    assert [a["name"] for a in api.get("/agents").json()] == ["Helper"]  # nothing written


def test_one_text_in_two_forms_in_a_file_is_stored_once(api: TestClient) -> None:
    lines = exported_lines(api)
    cat = next(r for r in archival_of(lines) if r["content"] == CAT)
    shouted = CAT.upper().replace(" ", "  ")
    twin = {
        **cat,
        "memory_id": cat["memory_id"][:-1] + ("0" if cat["memory_id"][-1] != "0" else "1"),
        "content": shouted,
        "content_hash": hashlib.sha256(shouted.encode()).hexdigest(),  # a file from before
    }
    twin.pop("vector", None)
    lines.insert(lines.index(cat) + 1, twin)

    report = import_file(api, reframed(lines), 201)
    assert report["written"]["archival"] == len(FACTS)
    (skipped,) = [s for s in report["skipped"] if s["kind"] == "archival"]
    assert (skipped["reason"], skipped["count"], skipped["examples"]) == (
        "the same text is stored already",
        1,
        [twin["memory_id"]],
    )
    contents = [m["content"] for m in memories(api, report["agent_id"])]
    assert contents.count(CAT) == 1
    assert shouted not in contents
