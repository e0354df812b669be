"""`agent-memory backup` and `restore` of the SQLite store, through the CLI: a backup
taken while a server writes (a turn streaming) is a consistent store that serves, and a
restore puts it back; what is not a backup is refused, and nothing is overwritten."""

import sqlite3
from pathlib import Path

import httpx2

from tests.app.test_cli import run_cli
from tests.fakes import serving
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.journal.test_resume import STORY
from tests.runtime.conftest import use_openai

ENV = {"MEMORY_EMBEDDING_BACKEND": "none", "ENCRYPTION_KEY": "k" * 40}


def store_env(db: Path) -> dict[str, str]:
    return {**ENV, "STORE": "sqlite", "SQLITE_PATH": str(db)}


def test_a_backup_taken_while_a_turn_streams_restores_and_serves(
    tmp_path: Path, fake_openai: FakeLLM
) -> None:
    db, copy = tmp_path / "live.db", tmp_path / "backup.db"
    with (
        serving.server_process(store_env(db)) as server,
        httpx2.Client(base_url=server.root, timeout=30) as http,
    ):
        agent_id = use_openai(http, fake_openai)
        fake_openai.replies.append(Reply(text=STORY, chunk_delay_seconds=0.05))
        body = {"agent_id": agent_id, "prompt": "Tell me a story", "session_id": "story"}
        with http.stream("POST", "/chat", json=body) as streaming:
            names = (line[7:] for line in streaming.iter_lines() if line.startswith("event: "))
            assert [next(names) for _ in range(3)][-1] == "text.delta"  # mid-answer
            made = run_cli("backup", str(copy), env=store_env(db))
            assert made.returncode == 0, made.stderr
            assert "Backed up" in made.stdout
            assert list(names)[-1] == "run.completed"
    conn = sqlite3.connect(copy)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()

    again = run_cli("backup", str(copy), env=store_env(db))
    assert again.returncode == 2
    assert "never overwrites" in again.stderr

    restored = tmp_path / "restored.db"
    done = run_cli("restore", str(copy), env=store_env(restored))
    assert done.returncode == 0, done.stderr
    with (
        serving.server_process(store_env(restored)) as server,
        httpx2.Client(base_url=server.root, timeout=30) as http,
    ):
        (agent,) = http.get("/agents").json()
        assert agent["id"] == agent_id
        listed = http.get("/conversations", params={"agent_id": agent_id}).json()
        (conversation,) = listed["conversations"]
        said = http.get(f"/conversations/{conversation['id']}/messages").json()["messages"]
        assert said[0]["content"] == "Tell me a story"  # the question was stored by then


def test_what_is_not_a_backup_is_refused_and_nothing_is_touched(tmp_path: Path) -> None:
    db, other = tmp_path / "live.db", tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE unrelated (x)").connection.close()
    refused = run_cli("restore", str(other), env=store_env(db))
    assert refused.returncode == 2
    assert "is not a backup of the table" in refused.stderr
    assert not db.exists() or db.stat().st_size == 0
    missing = run_cli("restore", str(tmp_path / "nowhere.db"), env=store_env(db))
    assert missing.returncode == 2
    assert "There is no backup" in missing.stderr
    dynamo = run_cli("backup", str(tmp_path / "b.db"), env={**ENV, "STORE": "dynamodb"})
    assert dynamo.returncode == 2
    assert "point-in-time recovery" in dynamo.stderr
