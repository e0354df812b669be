"""An agent's documents over HTTP: each type uploaded, split with its pages and headings,
processed in the background, found by the REST search; the same file twice is one document;
every bad file refused with its code and nothing stored; a deleted document gone, and an
agent's deletion taking its documents."""

import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.documents.conftest import processed, ready, search, upload
from tests.documents.pdfs import blank_pdf, encrypted_pdf, text_pdf
from tests.runtime.conftest import new_agent, running

MAX_BYTES = 64 * 1024
MAX_PAGES = 3

HANDBOOK = text_pdf(
    [
        ["Welcome to Acme. This handbook covers our policies."],
        ["Refunds are accepted within 30 days of purchase.", "Keep your receipt."],
        ["Shipping to Iceland takes two weeks."],
    ]
)
GUIDE = b"""# Guide

Acme makes garden tools.

## Billing

### Invoices

Invoices are sent on the first day of each month.

## Warranty

Every spade carries a lifetime warranty against breakage.
"""
PAGE = b"""<html><head><title>FAQ</title><script>var hidden = "never indexed";</script></head>
<body><h1>FAQ</h1><p>Answers to common questions.</p>
<h2>Opening hours</h2><p>The shop opens at nine &amp; closes at five.</p></body></html>"""
NOTES = b"The wifi password for the workshop is trowel-42.\n\nThe alarm code is 7731."


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("documents") / "app.db"


@pytest.fixture(scope="module")
def client(path: Path) -> Iterator[TestClient]:
    """One app for the module: each test makes agents of its own."""
    settings = Settings(
        sqlite_path=path,
        encryption_key="k" * 40,
        document_max_bytes=MAX_BYTES,
        document_max_pages=MAX_PAGES,
    )
    with running(settings, FrozenClock(float(int(__import__("time").time())))) as client:
        yield client


def test_each_type_is_split_with_its_pages_and_headings(client: TestClient) -> None:
    agent = new_agent(client, "Librarian")
    pdf = ready(client, agent, "handbook.pdf", HANDBOOK, "application/pdf")
    assert (pdf["media_type"], pdf["pages"], pdf["passages"]) == ("application/pdf", 3, 3)
    md = ready(client, agent, "guide.md", GUIDE)  # no content type: by the name's suffix
    assert md["media_type"] == "text/markdown"
    html = ready(client, agent, "faq.html", PAGE, "text/html")
    assert html["media_type"] == "text/html"
    text = ready(client, agent, "notes.txt", NOTES, "text/plain")
    assert text["media_type"] == "text/plain"

    refunds = search(client, agent, "refunds within 30 days", mode="lexical")[0]
    assert (refunds["file_name"], refunds["page"], refunds["heading"]) == ("handbook.pdf", 2, None)
    assert "within 30 days" in refunds["text"]
    invoices = search(client, agent, "when are invoices sent", mode="lexical")[0]
    assert (invoices["file_name"], invoices["heading"]) == (
        "guide.md",
        "Guide > Billing > Invoices",
    )
    assert invoices["text"].startswith("Guide > Billing > Invoices\n")
    hours = search(client, agent, "opening hours", mode="lexical")[0]
    assert (hours["file_name"], hours["heading"]) == ("faq.html", "FAQ > Opening hours")
    assert "nine & closes" in hours["text"]
    assert search(client, agent, "hidden never indexed", mode="lexical") == []  # the script
    wifi = search(client, agent, "what is the wifi password?")[0]
    assert (wifi["file_name"], wifi["page"], wifi["heading"]) == ("notes.txt", None, None)

    listed = client.get(f"/agents/{agent}/documents").json()["documents"]
    # Uploaded in the same (frozen) second: by name.
    assert [d["file_name"] for d in listed] == ["faq.html", "guide.md", "handbook.pdf", "notes.txt"]
    # Passages are no memories: archival search and message search never return them.
    memories = client.get(f"/agents/{agent}/memory/archival/search", params={"query": "refunds"})
    assert memories.json()["total"] == 0


def test_the_same_file_twice_is_one_document(client: TestClient) -> None:
    agent = new_agent(client, "Twice")
    first = ready(client, agent, "notes.txt", NOTES)
    again = upload(client, agent, "renamed.txt", NOTES)
    assert again.status_code == 200, again.text
    assert again.json()["id"] == first["id"]
    assert len(client.get(f"/agents/{agent}/documents").json()["documents"]) == 1
    assert len(search(client, agent, "alarm code", mode="lexical")) == 1
    # Another agent holding the same file has a document of its own.
    other = new_agent(client, "Other")
    assert upload(client, other, "notes.txt", NOTES).status_code == 202


@pytest.mark.parametrize(
    ("name", "data", "content_type", "status", "code"),
    [
        ("empty.txt", b"", "text/plain", 400, "document_empty"),
        ("blank.txt", b"  \n\n  ", "text/plain", 400, "document_has_no_text"),
        ("scan.pdf", blank_pdf(), "application/pdf", 400, "document_has_no_text"),
        ("locked.pdf", encrypted_pdf(), "application/pdf", 400, "document_encrypted"),
        ("long.pdf", text_pdf([["page"]] * (MAX_PAGES + 1)), None, 400, "document_too_many_pages"),
        ("fake.pdf", b"not a pdf at all", "application/pdf", 400, "document_unreadable"),
        ("broken.pdf", b"%PDF-1.4\n1 0 obj <<", "application/pdf", 400, "document_unreadable"),
        ("latin1.txt", "café".encode("latin-1"), "text/plain", 400, "document_unreadable"),
        ("photo.png", b"\x89PNG\r\n", "image/png", 415, "unsupported_document_type"),
        ("archive.zip", b"PK\x03\x04", None, 415, "unsupported_document_type"),
        ("big.txt", b"word " * (MAX_BYTES // 5 + 1), "text/plain", 413, "document_too_large"),
    ],
)
def test_a_bad_file_is_refused_and_nothing_is_stored(
    client: TestClient,
    path: Path,
    name: str,
    data: bytes,
    content_type: str | None,
    status: int,
    code: str,
) -> None:
    agent = new_agent(client, f"Refuser {code} {name}")
    refused = upload(client, agent, name, data, content_type)
    assert refused.status_code == status, refused.text
    assert refused.json()["code"] == code
    assert name in refused.json()["message"]
    assert client.get(f"/agents/{agent}/documents").json()["documents"] == []
    # Nothing of it is in the table: no document, guard, waiting passage or passage.
    assert [sk for sk in items_of(path, agent) if sk.startswith(("Upload", "Passage"))] == []


def test_a_body_far_past_the_limit_is_refused_before_it_is_read(client: TestClient) -> None:
    agent = new_agent(client, "Flooded")
    refused = upload(client, agent, "huge.txt", b"x" * (MAX_BYTES + 200 * 1024), "text/plain")
    assert refused.status_code == 413, refused.text
    assert client.get(f"/agents/{agent}/documents").json()["documents"] == []


def test_an_unknown_document_and_an_empty_query(client: TestClient) -> None:
    agent = new_agent(client, "Asker")
    missing = client.get(f"/agents/{agent}/documents/nope")
    assert (missing.status_code, missing.json()["code"]) == (404, "document_not_found")
    gone = client.delete(f"/agents/{agent}/documents/nope")
    assert (gone.status_code, gone.json()["code"]) == (404, "document_not_found")
    blank = client.get(f"/agents/{agent}/documents/search", params={"query": "   "})
    assert (blank.status_code, blank.json()["code"]) == (400, "empty_query")


def test_a_deleted_document_is_never_found_and_can_come_back(
    client: TestClient, path: Path
) -> None:
    agent = new_agent(client, "Forgetter")
    doc = ready(client, agent, "notes.txt", NOTES)
    assert search(client, agent, "alarm code", mode="lexical")
    assert client.delete(f"/agents/{agent}/documents/{doc['id']}").status_code == 204
    # Nothing of it is left in the table (the search's version and change log remain).
    left = items_of(path, agent)
    assert [
        sk for sk in left if not sk.startswith(("Search", "MemoryBlockDef#", "CoreMemory#"))
    ] == []
    for mode in ("hybrid", "lexical", "semantic"):
        assert search(client, agent, "alarm code", mode=mode) == []
    assert client.get(f"/agents/{agent}/documents/{doc['id']}").status_code == 404
    assert client.get(f"/agents/{agent}/documents").json()["documents"] == []
    # Uploaded again, it is a new document.
    again = ready(client, agent, "notes.txt", NOTES)
    assert again["id"] != doc["id"]
    assert len(search(client, agent, "alarm code", mode="lexical")) == 1


def items_of(path: Path, agent_id: str) -> list[str]:
    """The sort keys of every item in the agent's partition, read from the SQLite file."""
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [
            sk
            for table in tables
            for (sk,) in db.execute(
                f'SELECT sk FROM "{table}" WHERE pk = ?',  # noqa: S608 (the file's own table names)
                (f"Agent#{agent_id}",),
            )
        ]


def test_deleting_an_agent_deletes_its_documents(client: TestClient, path: Path) -> None:
    agent = new_agent(client, "Doomed")
    doc = ready(client, agent, "notes.txt", NOTES)
    held = items_of(path, agent)
    assert any(sk.startswith("Upload#") for sk in held)
    assert any(sk.startswith("UploadHash#") for sk in held)
    assert any(sk.startswith("Passage#") for sk in held)
    assert client.delete(f"/agents/{agent}").status_code == 204
    assert items_of(path, agent) == []
    assert client.get(f"/agents/{agent}/documents/{doc['id']}").status_code == 404
    # An agent of the same name later starts with none.
    reborn = new_agent(client, "Doomed")
    assert client.get(f"/agents/{reborn}/documents").json()["documents"] == []
    assert upload(client, reborn, "notes.txt", NOTES).status_code == 202


def test_processing_is_reported_then_ready(client: TestClient) -> None:
    agent = new_agent(client, "Watcher")
    sent = upload(client, agent, "guide.md", GUIDE, "text/markdown")
    assert sent.status_code == 202
    body = sent.json()
    assert body["state"] == "processing"
    assert body["run_id"].startswith("docrun_")
    done = processed(client, agent, body["id"])
    assert done["state"] == "ready"
    assert done["run_id"] == body["run_id"]
    assert done["passages"] >= 3


def test_the_same_file_sent_at_once_is_one_document(client: TestClient) -> None:
    agent = new_agent(client, "Racer")
    with ThreadPoolExecutor(4) as pool:
        sent = list(pool.map(lambda _: upload(client, agent, "guide.md", GUIDE), range(4)))
    assert sorted(r.status_code for r in sent) == [200, 200, 200, 202], [r.text for r in sent]
    assert len({r.json()["id"] for r in sent}) == 1
    assert processed(client, agent, sent[0].json()["id"])["state"] == "ready"
    assert len(client.get(f"/agents/{agent}/documents").json()["documents"]) == 1
