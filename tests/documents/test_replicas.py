"""Two app instances on one table (one SQLite file; one DynamoDB Local table), as two
replicas: a document uploaded and processed through one is found through the other, and
once deleted through either, its passages are never returned by the other again."""

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.documents.processing import STALE_SECONDS
from api.kit.clock import FrozenClock
from tests.documents.conftest import processed, ready, search
from tests.documents.test_documents import GUIDE, HANDBOOK, NOTES
from tests.runtime.conftest import Store, new_agent, running, settings

__all__ = ["settings"]


@pytest.fixture(params=["sqlite", "dynamodb_local"])
def replicas(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock, settings: Settings
) -> Iterator[tuple[TestClient, TestClient]]:
    endpoint = None
    if request.param == "dynamodb_local":
        endpoint = request.getfixturevalue("dynamodb_local").endpoint
    shared = Store(
        request.param, tmp_path / "replicas.db", f"docs-{uuid.uuid4().hex[:12]}", endpoint, clock
    )
    with (
        running(settings, clock, shared.open()) as a,
        running(settings, clock, shared.open()) as b,
    ):
        yield a, b


def test_a_deleted_document_is_never_retrieved_by_another_replica(
    replicas: tuple[TestClient, TestClient],
) -> None:
    a, b = replicas
    agent = new_agent(a)
    assert search(b, agent, "refunds") == []  # B has loaded the agent's (empty) index
    pdf = ready(a, agent, "handbook.pdf", HANDBOOK, "application/pdf")
    md = ready(a, agent, "guide.md", GUIDE, "text/markdown")
    assert processed(b, agent, pdf["id"])["state"] == "ready"  # B reads the same state
    found = search(b, agent, "refunds within 30 days", mode="lexical")
    assert (found[0]["file_name"], found[0]["page"]) == ("handbook.pdf", 2)

    assert a.delete(f"/agents/{agent}/documents/{pdf['id']}").status_code == 204
    for mode in ("hybrid", "lexical", "semantic"):
        assert all(p["file_name"] != "handbook.pdf" for p in search(b, agent, "refunds", mode=mode))
        assert all(
            p["file_name"] != "handbook.pdf"
            for p in search(
                b, agent, "Welcome to Acme. This handbook covers our policies.", mode=mode
            )
        )
    assert b.get(f"/agents/{agent}/documents/{pdf['id']}").status_code == 404

    # And B's delete reaches A.
    assert search(a, agent, "invoices", mode="lexical")[0]["file_name"] == "guide.md"
    assert b.delete(f"/agents/{agent}/documents/{md['id']}").status_code == 204
    for mode in ("hybrid", "lexical", "semantic"):
        assert search(a, agent, "invoices sent on the first day", mode=mode) == []
    assert a.get(f"/agents/{agent}/documents").json()["documents"] == []


def test_a_document_deleted_on_one_replica_while_another_processes_it_leaves_nothing(
    replicas: tuple[TestClient, TestClient],
) -> None:
    """B deletes the document A is still processing (or has just processed): whatever A
    writes after the delete is refused by the document's state, so nothing of it is found."""
    a, b = replicas
    agent = new_agent(a)
    sent = a.post(f"/agents/{agent}/documents", files={"file": ("notes.txt", NOTES, "text/plain")})
    assert sent.status_code == 202, sent.text
    assert b.delete(f"/agents/{agent}/documents/{sent.json()['id']}").status_code == 204
    # A's worker ends with it one way or the other; then nothing of it is found anywhere.
    listed = a.get(f"/agents/{agent}/documents").json()["documents"]
    assert listed == []
    again = ready(a, agent, "other.txt", b"Unrelated words about gardening.")
    assert again["state"] == "ready"  # A's worker has moved past the deleted document
    for client in (a, b):
        assert search(client, agent, "wifi password alarm code", mode="lexical") == []


def test_a_document_its_process_left_processing_is_processed_by_another(
    tmp_path: Path, clock: FrozenClock, settings: Settings
) -> None:
    """A process that accepted an upload stops before processing it (here: it has no
    workers): the document, durable in the table, is processed by another process once it
    is read there after its attempt went stale."""
    shared = Store("sqlite", tmp_path / "left.db", "left", None, clock)
    idle = settings.model_copy(update={"document_workers": 0})
    with running(idle, clock, shared.open()) as a:
        agent = new_agent(a)
        sent = a.post(f"/agents/{agent}/documents", files={"file": ("notes.txt", NOTES)})
        assert sent.status_code == 202, sent.text
    with running(settings, clock, shared.open()) as b:
        url = f"/agents/{agent}/documents/{sent.json()['id']}"
        assert b.get(url).json()["state"] == "processing"  # not stale: its process may live
        clock.advance(STALE_SECONDS + 1)
        assert processed(b, agent, sent.json()["id"])["state"] == "ready"
        assert search(b, agent, "alarm code", mode="lexical")[0]["file_name"] == "notes.txt"
