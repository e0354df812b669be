"""`agent-memory export AGENT > file` and `agent-memory import file`, run as a person runs
them, on a SQLite file."""

import asyncio
from pathlib import Path

from api.embeddings.base import Embedder
from api.kit.clock import FrozenClock
from api.memory import archival
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from tests.app.test_cli import run_cli
from tests.transfer.conftest import ADA, BOB, make_agent


def test_export_to_stdout_then_import_for_another_user(
    tmp_path: Path, clock: FrozenClock, static: Embedder
) -> None:
    db = tmp_path / "store.db"

    async def setup() -> str:
        table = SqliteTable(db, "agent-memory", load_definition(), clock=clock)
        await table.create()
        repos = Repositories.over(table)
        made = await make_agent(repos, SearchEngine(repos.search, static, clock), clock)
        await table.close()
        return made.agent.agent_id

    agent_id = asyncio.run(setup())
    env = {"STORE": "sqlite", "SQLITE_PATH": str(db), "LOCAL_USER_EMAIL": ADA}
    exported = run_cli("export", agent_id, env=env)
    assert exported.returncode == 0, exported.stderr
    file = tmp_path / "agent.jsonl"
    file.write_text(exported.stdout)
    assert exported.stdout.startswith('{"type":"header","format":"agent-memory-export"')

    by_name = run_cli("export", "Memory: customer_42", "-o", str(tmp_path / "b.jsonl"), env=env)
    assert by_name.returncode == 0, by_name.stderr
    assert (tmp_path / "b.jsonl").read_bytes().count(b"\n") == exported.stdout.count("\n")

    imported = run_cli("import", str(file), "--user", BOB, env=env)
    assert imported.returncode == 0, imported.stderr
    assert "Imported agent 'Memory: customer_42'" in imported.stdout
    assert "5 archival" in imported.stdout
    assert "4 message" in imported.stdout
    assert "importing" in imported.stderr
    assert "100%" in imported.stderr

    again = run_cli("import", str(file), "--user", BOB, env=env)
    assert again.returncode == 0, again.stderr
    assert "Already there:" in again.stdout
    assert "written: nothing" in again.stdout

    async def bobs_memory() -> list[str]:
        table = SqliteTable(db, "agent-memory", load_definition(), clock=clock)
        repos = Repositories.over(table)
        engine = SearchEngine(repos.search, static, clock)
        (agent,) = await repos.agents.list_for(BOB)
        found = await archival.search(engine, agent.agent_id, "cat")
        await table.close()
        return [m.content for m in found.memories]

    assert "Ada's cat is called Turing." in asyncio.run(bobs_memory())


def test_mistakes_are_told_plainly(tmp_path: Path) -> None:
    env = {"STORE": "sqlite", "SQLITE_PATH": str(tmp_path / "store.db")}
    missing = run_cli("export", "nobody", env=env)
    assert missing.returncode == 2
    assert "No agent with that id or name" in missing.stderr
    no_file = run_cli("import", str(tmp_path / "none.jsonl"), env=env)
    assert no_file.returncode == 2
    assert "no file" in no_file.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"header","format":"agent-memory-export","version":1}\n')
    refused = run_cli("import", str(bad), env=env)
    assert refused.returncode == 2
    assert "Nothing was imported" in refused.stderr
    assert "Traceback" not in refused.stderr
    google = {
        **env,
        "AUTH_MODE": "google",
        "PUBLIC_URL": "https://memory.example.com",
        "JWT_SECRET": "s" * 40,
        "ENCRYPTION_KEY": "k" * 40,
        "GOOGLE_CLIENT_ID": "id",
        "GOOGLE_CLIENT_SECRET": "secret",
    }
    no_user = run_cli("export", "x", env=google)
    assert no_user.returncode == 2
    assert "--user EMAIL" in no_user.stderr
    unknown = run_cli("export", "x", "--user", "who@example.com", env=google)
    assert unknown.returncode == 2
    assert "there is no user 'who@example.com'" in unknown.stderr
