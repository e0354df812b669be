"""Export and import tests: a real store (a SQLite file, or DynamoDB Local where a test says
so), the shipped static embedding model, and an agent with every kind of memory, made
through the services the app uses."""

import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from api.agents.models import Agent
from api.conversations import service as conversations
from api.conversations.messages import service as messages
from api.conversations.messages.models import Message
from api.embeddings.base import Embedder
from api.embeddings.factory import get_embedding_backend
from api.kit.clock import FrozenClock
from api.memory import archival
from api.memory import service as memory
from api.memory_runs.models import MemoryRun
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable
from api.store.dynamodb_local import DynamoDBLocal
from api.store.sqlite import SqliteTable
from api.store.table import Item, Table
from api.subjects import service as subjects
from api.transfer import service as transfer

ADA = "ada@example.com"
BOB = "bob@example.com"
SUBJECT = "customer_42"
FACTS = [
    ("Ada prefers green tea in the morning.", "preference", "breakfast", 0.9, ["user"]),
    ("Ada's cat is called Turing.", "fact", None, None, ["user"]),
    ("Ada works on compilers at Acme.", "fact", "work", 0.8, []),
    ("When Ada is stressed she goes climbing.", "pattern", None, 0.6, ["assistant"]),
    ("Ada can read Latin.", "capability", None, None, []),
]
QUESTIONS = ["what tea does Ada drink", "name of the cat", "where does Ada work", "climbing"]


@pytest.fixture(scope="session")
def static() -> Embedder:
    embedder = get_embedding_backend("static")
    assert embedder is not None
    return embedder


@pytest.fixture(params=["sqlite", "dynamodb_local"])
async def table(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock
) -> AsyncIterator[Table]:
    name = f"transfer-{uuid.uuid4().hex[:12]}"
    store: Table
    if request.param == "sqlite":
        store = SqliteTable(tmp_path / "transfer.db", name, load_definition(), clock=clock)
    else:
        server: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
        store = DynamoTable(name, load_definition(), endpoint_url=server.endpoint, clock=clock)
    await store.create()
    yield store
    await store.close()


@pytest.fixture
async def sqlite(tmp_path: Path, clock: FrozenClock) -> AsyncIterator[Table]:
    store = SqliteTable(tmp_path / "transfer.db", "transfer-test", load_definition(), clock=clock)
    await store.create()
    yield store
    await store.close()


@pytest.fixture
def repos(table: Table) -> Repositories:
    return Repositories.over(table)


@pytest.fixture
def repos_sqlite(sqlite: Table) -> Repositories:
    return Repositories.over(sqlite)


@pytest.fixture
def search(repos: Repositories, static: Embedder, clock: FrozenClock) -> SearchEngine:
    return SearchEngine(repos.search, static, clock)


@pytest.fixture
def search_sqlite(repos_sqlite: Repositories, static: Embedder, clock: FrozenClock) -> SearchEngine:
    return SearchEngine(repos_sqlite.search, static, clock)


@dataclass
class Made:
    agent: Agent
    conversation_id: str
    run_id: str


async def make_agent(
    repos: Repositories, search: SearchEngine, clock: FrozenClock, email: str = ADA
) -> Made:
    """Seed 004's subject with everything an agent can hold: blocks (one with a character
    limit), a capacity warning, archival memories with seed 003's fields, a conversation
    with a tool call and its result, and an ended memory run."""
    _, agent, _ = await subjects.open_subject(
        repos, email, SUBJECT, clock, provider="offline", model="offline-demo"
    )
    await memory.append_line(repos, agent.agent_id, "human", "Name is Ada Lovelace", clock=clock)
    await memory.create_block(
        repos,
        agent.agent_id,
        "projects",
        description="What Ada works on",
        word_limit=300,
        char_limit=2000,
        content="Analytical engine notes\nA compiler for Acme",
        clock=clock,
    )
    await repos.memory.add_warning_turn(agent.agent_id, "projects")
    for content, category, context, confidence, tags in FACTS:
        await archival.insert(
            repos,
            search,
            agent.agent_id,
            content,
            category=category,  # type: ignore[arg-type]
            context=context,
            confidence=confidence,
            tags=tags,
        )
    conversation = await conversations.create(repos, agent, "Tea talk", clock)
    said = [
        ("user", "I'd like my usual tea, please.", [], None),
        (
            "assistant",
            "",
            [{"id": "call_1", "name": "archival_memory_search", "arguments": {"query": "tea"}}],
            None,
        ),
        ("tool", "Ada prefers green tea in the morning.", [], "call_1"),
        ("assistant", "Green tea it is, Ada.", [], None),
    ]
    for i, (role, content, calls, call_id) in enumerate(said):
        at = datetime.fromtimestamp(clock.now() + i, UTC)
        await messages.record(
            repos,
            search,
            email,
            agent.agent_id,
            Message(
                conversation_id=conversation.conversation_id,
                message_id=f"m{i}",
                role=role,
                content=content,
                actor_id="ada" if role == "user" else None,
                tool_calls=calls,
                tool_call_id=call_id,
                created_at=at,
                ttl=messages.expires_at(at, agent.event_expiry_days),
            ),
        )
    now = datetime.fromtimestamp(clock.now(), UTC)
    run = MemoryRun(
        run_id=f"run_{agent.agent_id}_abc",
        agent_id=agent.agent_id,
        user_email=email,
        subject_id=SUBJECT,
        conversation_id=conversation.conversation_id,
        message_keys=["MESSAGE#x#m0"],
        messages_count=1,
        queued_at="2026-01-01T00:00:00.000000Z",
        state="completed",
        attempts=1,
        result="Updated summary.",
        created_at=now,
        ended_at=now,
    )
    assert await repos.memory_runs.restore(run)
    return Made(agent, conversation.conversation_id, run.run_id)


async def export_bytes(table: Table, agent: Agent, clock: FrozenClock, **options: Any) -> bytes:
    repos = Repositories.over(table)
    out = bytearray()
    async for chunk in transfer.export_agent(repos, agent, clock, **options):
        out += chunk
    return bytes(out)


def write(tmp_path: Path, data: bytes, name: str = "agent.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def records(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


def reframed(lines: list[dict[str, Any]]) -> bytes:
    """A file of these header and records with a correct trailer: what is wrong in it is
    what the records say, not the framing."""
    body = b"".join(json.dumps(r).encode() + b"\n" for r in lines if r["type"] != "end")
    counts: dict[str, int] = {}
    for r in lines[1:]:
        if r["type"] != "end":
            counts[r["type"]] = counts.get(r["type"], 0) + 1
    trailer = {"type": "end", "counts": counts, "sha256": hashlib.sha256(body).hexdigest()}
    return body + json.dumps(trailer).encode() + b"\n"


async def everything(table: Table) -> list[Item]:
    """Every item of the table, in a stable order: what 'nothing changed' compares."""
    items: list[Item] = []
    cursor: str | None = None
    while True:
        page = await table.scan(cursor=cursor)
        items += page.items
        cursor = page.cursor
        if cursor is None:
            break
    return sorted(items, key=lambda i: (i["pk"], i["sk"]))
