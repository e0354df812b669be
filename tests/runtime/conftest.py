"""Turn tests: the app in local mode on a store the test names, the fake OpenAI, and SSE
read back as events."""

import asyncio
import json
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.main import create_app
from api.runtime.hooks import HookProvider
from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable
from api.store.dynamodb_local import DynamoDBLocal
from api.store.sqlite import SqliteTable
from api.store.table import Table
from tests.fakes.llm_servers import FakeLLM, ToolCallScript
from tests.fakes.serving import serve_in_thread

LOCAL = "http://127.0.0.1"
OPENAI_KEY = "sk-test-0000000000000000000000000000"


@dataclass(frozen=True)
class Store:
    """Where a test's data lives; `open()` gives a new handle on the same data, as a
    restarted server would have."""

    engine: str
    path: Path
    name: str
    endpoint: str | None
    clock: FrozenClock

    def open(self) -> Table:
        definition = load_definition()
        if self.engine == "sqlite":
            return SqliteTable(self.path, self.name, definition, clock=self.clock)
        return DynamoTable(self.name, definition, endpoint_url=self.endpoint, clock=self.clock)


@pytest.fixture
def served(tmp_path: Path, clock: FrozenClock) -> Iterator[str]:
    """Our app under real uvicorn (its root URL): a client can really go away."""
    settings = Settings(sqlite_path=tmp_path / "served.db", encryption_key="k" * 40)

    def build(root: str) -> tuple[str, FastAPI]:
        return root, create_app(settings, clock=clock)

    with serve_in_thread("app", build, "/health", lifespan="on") as root:
        yield root


@pytest.fixture(params=["sqlite", "dynamodb_local"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock) -> Store:
    endpoint = None
    if request.param == "dynamodb_local":
        server: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
        endpoint = server.endpoint
    name = f"turns-{uuid.uuid4().hex[:12]}"
    return Store(request.param, tmp_path / "turns.db", name, endpoint, clock)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(sqlite_path=tmp_path / "app.db", encryption_key="k" * 40)


@contextmanager
def running(
    settings: Settings,
    clock: FrozenClock,
    table: Table | None = None,
    hook_providers: Sequence[HookProvider] = (),
) -> Iterator[TestClient]:
    app = create_app(settings, table=table, clock=clock, hook_providers=hook_providers)
    with TestClient(app, base_url=LOCAL) as client:
        yield client
    if table is not None:  # the app leaves a table it was given open
        asyncio.run(table.close())


@pytest.fixture
def client(settings: Settings, clock: FrozenClock) -> Iterator[TestClient]:
    with running(settings, clock) as client:
        yield client


def use_openai(client: httpx2.Client, fake: FakeLLM, name: str = "Scripted") -> str:
    """An agent on the OpenAI adapter, talking to the fake; its id."""
    saved = client.put(
        "/settings/providers/openai", json={"api_key": OPENAI_KEY, "base_url": fake.base_url}
    )
    assert saved.status_code == 200, saved.text
    created = client.post(
        "/agents", json={"name": name, "provider": "openai", "model": "gpt-4o-mini"}
    )
    assert created.status_code == 201, created.text
    agent_id: str = created.json()["id"]
    return agent_id


def new_agent(client: httpx2.Client, name: str = "Kit", **fields: Any) -> str:
    created = client.post("/agents", json={"name": name, **fields})
    assert created.status_code == 201, created.text
    agent_id: str = created.json()["id"]
    return agent_id


def new_conversation(client: httpx2.Client, agent_id: str) -> str:
    created = client.post("/conversations", json={"agent_id": agent_id})
    assert created.status_code == 201, created.text
    conversation_id: str = created.json()["id"]
    return conversation_id


def append(content: str) -> ToolCallScript:
    """A scripted model's call that stores a line in the human block."""
    return ToolCallScript("core_memory_append", json.dumps({"block": "human", "content": content}))


@dataclass(frozen=True)
class Event:
    name: str
    data: dict[str, Any]
    id: str | None


def parse_sse(text: str) -> tuple[list[Event], list[str]]:
    """The events of an SSE body, and its comment lines (keep-alive pings)."""
    found: list[Event] = []
    comments: list[str] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data, event_id = "message", [], None
        for line in block.split("\n"):
            if line.startswith(":"):
                comments.append(line[1:].strip())
            elif line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line.startswith("id:"):
                event_id = line[3:].strip()
        if data:
            found.append(Event(name, json.loads("\n".join(data)), event_id))
    return found, comments


def events_of(response: httpx2.Response) -> list[Event]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_sse(response.text)[0]


def send(client: httpx2.Client, conversation_id: str, content: str, **extra: Any) -> list[Event]:
    return events_of(
        client.post(
            f"/conversations/{conversation_id}/messages", json={"content": content, **extra}
        )
    )


def names(found: Sequence[Event]) -> list[str]:
    return [e.name for e in found]


def messages(client: httpx2.Client, conversation_id: str) -> list[dict[str, Any]]:
    listed = client.get(f"/conversations/{conversation_id}/messages", params={"limit": 100})
    assert listed.status_code == 200, listed.text
    found: list[dict[str, Any]] = listed.json()["messages"]
    return found


def lines_of(client: httpx2.Client, agent_id: str, block: str = "human") -> list[str]:
    got = client.get(f"/agents/{agent_id}/memory/blocks/{block}")
    assert got.status_code == 200, got.text
    found: list[str] = got.json()["lines"]
    return found
