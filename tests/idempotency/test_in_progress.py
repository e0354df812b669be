"""A retry that comes while the first request still runs: a real turn (POST /chat, without a
stream), held before its LLM call by a hook provider of the test's own."""

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.main import create_app
from api.runtime.hooks import AgentInitialized, HookProvider
from tests.idempotency.conftest import LOCAL, key, records


class Gate(HookProvider):
    """Holds every turn before its first LLM call until the test opens it."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.opened.set()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Turns wait inside the block; on the way out (failing or not) they are let go
        before the requests they hold are waited for."""
        self.opened.clear()
        try:
            yield
        finally:
            self.opened.set()

    async def on_agent_initialized(self, event: AgentInitialized) -> None:
        self.entered.set()
        await asyncio.to_thread(self.opened.wait)  # a worker thread waits, not the loop


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def client(settings: Settings, clock: FrozenClock, gate: Gate) -> Iterator[TestClient]:
    app = create_app(settings, clock=clock, hook_providers=[gate])
    with TestClient(app, base_url=LOCAL) as client:
        yield client


def test_a_retry_while_the_turn_runs_waits_then_gets_its_answer(
    client: TestClient, gate: Gate
) -> None:
    agent_id = client.post("/agents", json={"name": "Tea"}).json()["id"]
    body = {"agent_id": agent_id, "prompt": "I prefer tea", "session_id": "s1", "stream": False}
    with ThreadPoolExecutor(1) as pool, gate.held():
        first = pool.submit(client.post, "/chat", json=body, headers=key("turn-1"))
        assert gate.entered.wait(10), "the first turn never started"

        busy = client.post("/chat", json=body, headers=key("turn-1"))
        assert busy.status_code == 409, busy.text
        assert busy.json()["code"] == "idempotency_request_in_progress"
        assert "still running" in busy.json()["message"]
        assert busy.headers["retry-after"] == "1"
        # Another request under the same key is refused as such, even while the first runs.
        other = client.post("/chat", json={**body, "prompt": "Coffee"}, headers=key("turn-1"))
        assert other.status_code == 422
        assert other.json()["code"] == "idempotency_key_reused"
        (claim,) = records(client)
        assert claim.state == "running"

        gate.opened.set()
        answered = first.result(timeout=30)
    assert answered.status_code == 200, answered.text
    assert answered.json()["output"]

    again = client.post("/chat", json=body, headers=key("turn-1"))
    assert (again.status_code, again.content) == (200, answered.content)
    assert again.headers["idempotent-replayed"] == "true"
    conversation_id = answered.json()["conversation_id"]
    stored = client.get(f"/conversations/{conversation_id}/messages").json()["messages"]
    assert [m["content"] for m in stored if m["role"] == "user"] == ["I prefer tea"]  # one turn
