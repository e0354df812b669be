"""GET /agents/{id}/export and POST /agents/import over HTTP (the app in local mode, a SQLite
file), and the size limits of an import."""

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.transfer import service as transfer
from api.transfer.errors import ImportTooLarge
from tests.runtime.conftest import running
from tests.transfer.conftest import FACTS

FIXTURE = Path(__file__).parent / "fixtures" / "letta_v1.af"


def _settings(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(sqlite_path=tmp_path / "app.db", encryption_key="k" * 40, **overrides)


@pytest.fixture
def api(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    # MAX_REQUEST_BYTES at its least: an import file is larger, and still accepted.
    with running(_settings(tmp_path, max_request_bytes=1024), clock) as client:
        yield client


def _agent(client: TestClient) -> str:
    made = client.post("/agents", json={"name": "Helper", "persona": "I help."})
    assert made.status_code == 201, made.text
    agent_id: str = made.json()["id"]
    for content, category, context, confidence, tags in FACTS:
        body: dict[str, Any] = {"content": content, "category": category, "tags": tags}
        if context:
            body["context"] = context
        if confidence is not None:
            body["confidence"] = confidence
        stored = client.post(f"/agents/{agent_id}/memory/archival", json=body)
        assert stored.status_code == 201, stored.text
    return agent_id


def test_an_agent_exported_and_imported_over_http(api: TestClient) -> None:
    agent_id = _agent(api)
    exported = api.get(f"/agents/{agent_id}/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/x-ndjson"
    assert f'filename="agent-{agent_id}.jsonl"' in exported.headers["content-disposition"]
    lines = [json.loads(line) for line in exported.content.splitlines()]
    assert [r["type"] for r in lines].count("archival") == 5
    assert len(exported.content) > 1024  # past MAX_REQUEST_BYTES

    imported = api.post(
        "/agents/import",
        content=exported.content,
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert imported.status_code == 201, imported.text
    (report,) = imported.json()["agents"]
    assert report["created"]
    assert report["agent_name"] == "Helper (imported)"
    assert report["written"]["archival"] == 5
    assert report["notes"] == [
        "you have an agent named 'Helper': this one is named 'Helper (imported)'"
    ]
    copy = report["agent_id"]
    found = api.get(f"/agents/{copy}/memory/archival/search", params={"query": "cat"})
    assert found.status_code == 200, found.text
    assert "Ada's cat is called Turing." in found.text

    again = api.post("/agents/import", content=exported.content)
    assert again.status_code == 200, again.text
    assert again.json()["agents"][0]["created"] is False
    assert again.json()["agents"][0]["written"] == {}
    names = sorted(a["name"] for a in api.get("/agents").json())
    assert names == ["Helper", "Helper (imported)"]

    # MAX_REQUEST_BYTES still holds for every other route.
    too_big = api.post("/agents", json={"name": "x" * 2000})
    assert too_big.status_code == 413
    assert too_big.json()["code"] == "payload_too_large"


def test_provider_credentials_never_go_into_a_file(api: TestClient) -> None:
    key = "sk-proj-never-in-an-export-1234567890"
    saved = api.put("/settings/providers/openai", json={"api_key": key})
    assert saved.status_code == 200, saved.text
    made = api.post("/agents", json={"name": "Keyed", "provider": "openai", "model": "gpt-4o"})
    assert made.status_code == 201, made.text
    exported = api.get(f"/agents/{made.json()['id']}/export")
    assert exported.status_code == 200
    agent = json.loads(exported.content.splitlines()[1])
    assert (agent["provider"], agent["model"]) == ("openai", "gpt-4o")  # the names only
    for part in (key, key[:12], "api_key", "credentials"):
        assert part not in exported.text, part


def test_a_letta_agent_file_is_imported_over_http(api: TestClient) -> None:
    imported = api.post("/agents/import", content=FIXTURE.read_bytes())
    assert imported.status_code == 201, imported.text
    (report,) = imported.json()["agents"]
    assert report["agent_name"] == "Support Bot"
    assert {"kind": "tool", "count": 2} in [
        {"kind": s["kind"], "count": s["count"]} for s in report["skipped"]
    ]


def test_a_bad_file_is_a_400_with_nothing_written(api: TestClient) -> None:
    agent_id = _agent(api)
    exported = api.get(f"/agents/{agent_id}/export").content
    cut = api.post("/agents/import", content=exported[: len(exported) // 3 * 2])
    assert cut.status_code == 400
    assert cut.json()["code"] == "invalid_import_file"
    assert "Nothing was imported" in cut.json()["message"]
    assert [a["name"] for a in api.get("/agents").json()] == ["Helper"]


def test_another_agent_id_is_a_404(api: TestClient) -> None:
    missing = api.get("/agents/0123456789abcdef0123456789abcdef/export")
    assert missing.status_code == 404
    assert missing.json()["code"] == "agent_not_found"


def test_an_import_over_max_import_bytes_is_a_413(tmp_path: Path, clock: FrozenClock) -> None:
    settings = _settings(tmp_path, max_import_bytes=2048)
    with running(settings, clock) as client:
        body = FIXTURE.read_bytes()
        assert len(body) > 2048
        refused = client.post("/agents/import", content=body)
        assert refused.status_code == 413
        assert refused.json()["code"] == "payload_too_large"

        def chunks() -> Iterator[bytes]:  # no Content-Length: refused as it passes the limit
            for start in range(0, len(body), 512):
                yield body[start : start + 512]

        streamed = client.post("/agents/import", content=chunks())
        assert streamed.status_code == 413
        assert client.get("/agents").json() == []


def test_the_spool_refuses_past_its_limit_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route's own bound, should a larger MAX_REQUEST_BYTES ever apply to it."""

    async def body() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b"x" * 1000

    # A temporary directory of the test's own: imports other tests run at the same time
    # (pytest-xdist's other workers) spool into the machine's.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(ImportTooLarge) as refusal:
        asyncio.run(transfer.spool(body(), 5000))
    assert refusal.value.status_code == 413
    assert "MAX_IMPORT_BYTES" in refusal.value.message
    assert list(tmp_path.glob("agent-import-*")) == []


def test_an_import_with_an_idempotency_key_is_streamed_not_held(api: TestClient) -> None:
    """The import guards itself by content; the idempotency middleware lets it through
    rather than reading a file of up to MAX_IMPORT_BYTES into memory to fingerprint it."""
    exported = api.get(f"/agents/{_agent(api)}/export").content
    key = {"Idempotency-Key": "import-1"}
    first = api.post("/agents/import", content=exported, headers=key)
    assert first.status_code == 201, first.text
    second = api.post("/agents/import", content=exported, headers=key)
    assert second.status_code == 200, second.text
    assert "Idempotent-Replayed" not in second.headers
    assert second.json()["agents"][0]["created"] is False
