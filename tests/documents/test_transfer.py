"""Export and import carry an agent's documents: each ready document and its passages (with
their vectors, or without, embedded again), landing ready and found by the same searches
with their pages and headings; importing the file again writes nothing."""

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.documents.conftest import ready, search
from tests.documents.test_documents import GUIDE, HANDBOOK
from tests.runtime.conftest import new_agent, running
from tests.transfer.conftest import reframed


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = Settings(
        sqlite_path=tmp_path_factory.mktemp("transfer") / "app.db", encryption_key="k" * 40
    )
    with running(settings, FrozenClock(float(int(time.time())))) as client:
        yield client


def exported(client: TestClient, agent_id: str, **params: Any) -> bytes:
    got = client.get(f"/agents/{agent_id}/export", params=params)
    assert got.status_code == 200, got.text
    return got.content


def imported(client: TestClient, data: bytes) -> dict[str, Any]:
    sent = client.post("/agents/import", content=data)
    assert sent.status_code in (200, 201), sent.text
    report: dict[str, Any] = sent.json()["agents"][0]
    return report


def what(client: TestClient, agent_id: str) -> list[tuple[str, int | None, str | None, str]]:
    found = search(client, agent_id, "refunds invoices warranty", mode="lexical", limit=20)
    return sorted((p["file_name"], p["page"], p["heading"], p["text"]) for p in found)


@pytest.mark.parametrize("vectors", [True, False])
def test_documents_round_trip(client: TestClient, vectors: bool) -> None:
    source = new_agent(client, f"Source {vectors}")
    ready(client, source, "handbook.pdf", HANDBOOK, "application/pdf")
    ready(client, source, "guide.md", GUIDE, "text/markdown")
    data = exported(client, source, vectors=str(vectors).lower())
    lines = [json.loads(line) for line in data.splitlines()]
    assert [r["type"] for r in lines].count("document") == 2
    passages = [r for r in lines if r["type"] == "passage"]
    assert all(("vector" in p) == vectors for p in passages)

    report = imported(client, data)
    assert report["created"]
    assert report["written"]["document"] == 2
    assert report["written"]["passage"] == len(passages)
    assert ("embedded" in report["written"]) == (not vectors)
    copy = report["agent_id"]
    listed = client.get(f"/agents/{copy}/documents").json()["documents"]
    assert sorted((d["file_name"], d["state"], d["pages"]) for d in listed) == [
        ("guide.md", "ready", None),
        ("handbook.pdf", "ready", 3),
    ]
    assert what(client, copy) == what(client, source)
    semantic = search(client, copy, "how long can I return a purchase?", mode="semantic")
    assert semantic[0]["file_name"] == "handbook.pdf"

    # Once more: nothing new.
    again = imported(client, data)
    assert not again["created"]
    assert "document" not in again["written"]
    assert len(client.get(f"/agents/{copy}/documents").json()["documents"]) == 2
    # The copy's export carries the same documents and passages.
    copied = [json.loads(line) for line in exported(client, copy, vectors="false").splitlines()]
    assert sorted(r["content"] for r in copied if r["type"] == "passage") == sorted(
        p["content"] for p in passages
    )


def test_a_passage_out_of_place_is_refused(client: TestClient) -> None:
    source = new_agent(client, "Shuffled")
    ready(client, source, "guide.md", GUIDE, "text/markdown")
    lines = [json.loads(line) for line in exported(client, source).splitlines()]
    first = next(i for i, r in enumerate(lines) if r["type"] == "passage")
    lines[first]["number"] = 5
    refused = client.post("/agents/import", content=reframed(lines))
    assert refused.status_code == 400, refused.text
    assert "out of order" in refused.json()["message"]
