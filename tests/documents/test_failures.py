"""A document whose processing fails (the embedding backend answering errors) ends
`failed`, with the reason, and nothing of it is found; the same file uploaded again once the
backend is back is processed anew."""

from pathlib import Path

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.documents.conftest import processed, search, upload
from tests.documents.test_documents import NOTES
from tests.fakes.embedding_servers import start_fake_ollama
from tests.runtime.conftest import new_agent, running


def test_a_failed_document_is_never_found_and_a_new_upload_replaces_it(
    tmp_path: Path, clock: FrozenClock
) -> None:
    with start_fake_ollama() as ollama:
        settings = Settings(
            sqlite_path=tmp_path / "app.db",
            encryption_key="k" * 40,
            memory_embedding_backend="ollama",
            ollama_base_url=ollama.base_url,
            document_attempts=1,
        )
        with running(settings, clock) as client:
            agent = new_agent(client)
            ollama.fail_status = 500
            sent = upload(client, agent, "notes.txt", NOTES)
            assert sent.status_code == 202, sent.text
            failed = processed(client, agent, sent.json()["id"])
            assert failed["state"] == "failed"
            assert failed["error"].startswith("embedding_failed: ")
            assert search(client, agent, "alarm code", mode="lexical") == []

            ollama.fail_status = None
            again = upload(client, agent, "notes.txt", NOTES)
            assert again.status_code == 202, again.text  # not the failed one: a new one
            assert again.json()["id"] != failed["id"]
            assert processed(client, agent, again.json()["id"])["state"] == "ready"
            listed = client.get(f"/agents/{agent}/documents").json()["documents"]
            assert [d["id"] for d in listed] == [again.json()["id"]]
            assert len(search(client, agent, "alarm code", mode="lexical")) == 1
