"""Writes tests/upgrade/fixtures/layout-1.db: a SQLite store as this release leaves it
(layout 1, from before the schema version item), for the upgrade test to serve with every
later release. Made once; run again only to add what a new kind of item needs, never to
make the test pass.

    uv run python -m tests.upgrade.make_fixture
"""

import asyncio
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import httpx2
from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app
from api.store.definition import load_definition
from api.store.keys import schema_version
from api.store.sqlite import SqliteTable

FIXTURE = Path(__file__).parent / "fixtures" / "layout-1.db"
TABLE = "agent-memory"


def fill(client: TestClient) -> None:
    def ok(response: httpx2.Response) -> dict[str, Any]:
        assert response.status_code in (200, 201, 202), response.text
        found: dict[str, Any] = response.json()
        return found

    # Kept forever (no expiry): the test reads its messages in every later year.
    ada = {"name": "Ada", "persona": "I help Ada.", "event_expiry_days": 0}
    agent = ok(client.post("/agents", json=ada))["id"]
    ok(client.post(f"/agents/{agent}/memory/blocks/human/lines", json={"content": "Name: Ada"}))
    ok(
        client.post(
            f"/agents/{agent}/memory/blocks",
            json={"name": "projects", "content": "Analytical engine notes"},
        )
    )
    for text in (
        "I love pizza with extra mozzarella.",
        "My sister lives in Lisbon.",
        "The car needs new tyres.",
    ):
        ok(client.post(f"/agents/{agent}/memory/archival", json={"content": text}))
    conversation = ok(client.post("/conversations", json={"agent_id": agent}))["id"]
    ok(
        client.post(
            f"/conversations/{conversation}/messages",
            json={"content": "My name is Ada", "stream": False},
        )
    )
    ok(
        client.post(
            "/messages", json={"agent_name": "Ada", "role": "user", "content": "I work on engines."}
        )
    )
    ok(client.post("/memory/initialize", json={"user_id": "ada-1"}))
    ok(
        client.post(
            "/memory/add",
            json={
                "user_id": "ada-1",
                "messages": [{"role": "user", "content": "I prefer tea."}],
                "wait_for_completion": True,
            },
        )
    )


async def without_schema_item(path: Path) -> None:
    """As a store of this release before the version item existed holds it."""
    table = SqliteTable(path, TABLE, load_definition())
    await table.delete(schema_version())
    await table.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.db"
        settings = Settings(
            store="sqlite", sqlite_path=path, dynamodb_table=TABLE, encryption_key="k" * 40
        )
        with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
            fill(client)
        asyncio.run(without_schema_item(path))
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        conn.close()
        FIXTURE.write_bytes(path.read_bytes())
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
