"""/metrics scraped after a turn, a search and failed requests: the counters and histograms
moved under the labels they should, and no label holds a raw path."""

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator
from io import StringIO
from pathlib import Path
from typing import cast

import pytest
from fastapi.testclient import TestClient
from starlette.types import Message, Receive, Scope, Send

from api.config import Settings
from api.errors import AppError
from api.http.middleware.observability import Observability
from api.llm.types import ChatRequest, LLMEvent, TextDelta, Usage
from api.main import create_app
from api.observability import llm as observed_llm
from api.observability import metrics
from api.observability.store import MeasuredTable
from api.runtime.hooks import HookProvider, MessageAdded
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import ConditionFailed, ItemAbsent, Key
from tests.observability.conftest import grew, label_sets, loopback_client, parse, scrape, value


def test_a_turn_a_search_and_a_failed_request_are_counted(client: TestClient) -> None:
    before = scrape(client)
    agent = client.post("/agents", json={"name": "Kit"}).json()["id"]
    turn = client.post(
        "/chat", json={"agent_id": agent, "prompt": "My name is Alice.", "stream": False}
    )
    assert turn.status_code == 200, turn.text
    stored = client.post(
        f"/agents/{agent}/memory/archival", json={"content": "Alice works at the zoo."}
    )
    assert stored.status_code == 201, stored.text
    found = client.get(f"/agents/{agent}/memory/archival/search", params={"query": "zoo"})
    assert found.status_code == 200, found.text
    missing = client.get("/agents/no-such-agent")
    assert missing.status_code == 404
    nowhere = client.get("/no/such/path")
    assert nowhere.status_code == 404
    after = scrape(client)

    # Requests, by route template and status; never by raw path.
    requests = "agent_memory_http_requests_total"
    assert grew(before, after, requests, method="POST", route="/chat", status="200") == 1
    assert grew(before, after, requests, method="POST", route="/agents", status="201") == 1
    assert (
        grew(before, after, requests, method="GET", route="/agents/{agent_id}", status="404") == 1
    )
    assert grew(before, after, requests, method="GET", route="unmatched", status="404") == 1
    search_route = "/agents/{agent_id}/memory/archival/search"
    assert grew(before, after, requests, method="GET", route=search_route, status="200") == 1
    routes = {labels["route"] for labels in label_sets(after, requests)}
    assert not any(agent in route or "no-such" in route for route in routes)
    latency = "agent_memory_http_request_duration_seconds"
    failed = {"method": "GET", "route": "/agents/{agent_id}", "status": "404"}
    assert grew(before, after, f"{latency}_count", **failed) == 1
    assert grew(before, after, f"{latency}_bucket", **failed, le="+Inf") == 1
    assert grew(before, after, f"{latency}_sum", **failed) > 0

    # The turn, its LLM calls and tokens, by provider.
    assert grew(before, after, "agent_memory_turns_started_total", provider="offline") == 1
    assert (
        grew(
            before,
            after,
            "agent_memory_turns_finished_total",
            provider="offline",
            outcome="completed",
        )
        == 1
    )
    calls = grew(
        before, after, "agent_memory_llm_calls_total", provider="offline", outcome="completed"
    )
    assert calls >= 1
    first_token = "agent_memory_llm_time_to_first_token_seconds"
    assert grew(before, after, f"{first_token}_count", provider="offline") == calls
    assert grew(before, after, f"{first_token}_bucket", provider="offline", le="+Inf") == calls
    assert grew(before, after, f"{first_token}_sum", provider="offline") > 0
    tokens = "agent_memory_llm_tokens_total"
    assert grew(before, after, tokens, provider="offline", direction="input") > 0
    assert grew(before, after, tokens, provider="offline", direction="output") > 0
    running = value(after, "agent_memory_background_runs", kind="turn", state="running")
    assert running == value(before, "agent_memory_background_runs", kind="turn", state="running")

    # The store calls behind them, by operation and engine.
    store = "agent_memory_store_call_duration_seconds_count"
    for operation in ("get", "query", "transact_write"):
        assert grew(before, after, store, operation=operation, engine="sqlite") > 0, operation

    # The search, and the index it left in memory.
    assert grew(before, after, "agent_memory_search_duration_seconds_count", mode="lexical") == 1
    # One index, this agent's: its archival memory, the user's message and the reply.
    assert grew(before, after, "agent_memory_search_indexes") == 1
    assert grew(before, after, "agent_memory_search_index_documents") == 3
    assert grew(before, after, "agent_memory_search_index_bytes") > 0


def test_index_sizes_move_the_gauges_by_what_changed(client: TestClient) -> None:
    first, second = metrics.SearchIndexSizes(), metrics.SearchIndexSizes()
    before = scrape(client)
    first.report({"a": 100}, kept="a", documents=4)
    second.report({"b": 50}, kept="b", documents=2)
    first.report({"a": 100, "c": 30}, kept="c", documents=1)
    middle = scrape(client)
    assert grew(before, middle, "agent_memory_search_indexes") == 3
    assert grew(before, middle, "agent_memory_search_index_bytes") == 180
    assert grew(before, middle, "agent_memory_search_index_documents") == 7
    first.report({"c": 30})  # "a" evicted: its documents go with it
    after = scrape(client)
    assert grew(middle, after, "agent_memory_search_indexes") == -1
    assert grew(middle, after, "agent_memory_search_index_bytes") == -100
    assert grew(middle, after, "agent_memory_search_index_documents") == -4


class FailWhenAsked(HookProvider):
    """Fails a turn whose prompt asks for it, as a broken hook or store write would."""

    async def on_message_added(self, event: MessageAdded) -> None:
        if event.message.role == "user" and "fail" in event.message.content:
            raise Broken("The test asked this turn to fail.")


class Broken(AppError):
    status_code = 502
    code = "broken_on_purpose"


def test_a_failed_turn_is_counted_with_its_code(settings: Settings) -> None:
    app = create_app(settings, hook_providers=[FailWhenAsked()])
    with loopback_client(app) as client:
        before = scrape(client)
        agent = client.post("/agents", json={"name": "Kit"}).json()["id"]
        body = {"agent_id": agent, "prompt": "Please fail.", "stream": False}
        answer = client.post("/chat", json=body)
        assert answer.status_code == 502, answer.text
        assert answer.json()["code"] == "broken_on_purpose"
        after = scrape(client)
    finished = "agent_memory_turns_finished_total"
    assert grew(before, after, finished, provider="offline", outcome="failed") == 1
    assert grew(before, after, finished, provider="offline", outcome="completed") == 0
    failures = "agent_memory_turn_failures_total"
    assert grew(before, after, failures, provider="offline", code="broken_on_purpose") == 1


class Flaky:
    """An LLM that says a word and then fails, as a provider dropping mid-answer does."""

    name = "flaky"

    async def stream(self, request: ChatRequest) -> AsyncIterator[LLMEvent]:
        await asyncio.sleep(0.01)
        yield TextDelta("Hel")
        yield Usage(input_tokens=7, output_tokens=1)
        raise Unavailable("The provider went away.")

    async def list_models(self) -> list[str]:
        return []

    async def aclose(self) -> None:
        return None


class Unavailable(AppError):
    status_code = 502
    code = "provider_unavailable"


async def test_a_failing_llm_call_is_counted_with_its_code() -> None:
    before = parse(metrics.render().decode())
    seen = []
    try:
        async for event in observed_llm.observed(Flaky(), ChatRequest("m", [])):
            seen.append(event)
    except Unavailable:
        pass
    after = parse(metrics.render().decode())
    assert seen == [TextDelta("Hel"), Usage(7, 1)]
    labels = {"provider": "flaky"}
    assert grew(before, after, "agent_memory_llm_calls_total", **labels, outcome="failed") == 1
    assert (
        grew(before, after, "agent_memory_llm_errors_total", **labels, code="provider_unavailable")
        == 1
    )
    first_token = grew(before, after, "agent_memory_llm_time_to_first_token_seconds_sum", **labels)
    assert first_token >= 0.01
    assert grew(before, after, "agent_memory_llm_tokens_total", **labels, direction="input") == 7


async def test_store_calls_are_timed_and_their_errors_counted(tmp_path: Path) -> None:
    table = MeasuredTable(SqliteTable(tmp_path / "s.db", "measured", load_definition()))
    await table.create()
    before = parse(metrics.render().decode())
    start = time.perf_counter()
    await table.put({"pk": "p", "sk": "s"}, condition=ItemAbsent())
    with contextlib.suppress(ConditionFailed):
        await table.put({"pk": "p", "sk": "s"}, condition=ItemAbsent())
    assert await table.get(Key("p", "s")) == {"pk": "p", "sk": "s"}
    elapsed = time.perf_counter() - start
    after = parse(metrics.render().decode())
    await table.close()
    seconds = "agent_memory_store_call_duration_seconds"
    assert grew(before, after, f"{seconds}_count", operation="put", engine="sqlite") == 2
    assert grew(before, after, f"{seconds}_count", operation="get", engine="sqlite") == 1
    assert 0 < grew(before, after, f"{seconds}_sum", operation="put", engine="sqlite") <= elapsed
    errors = "agent_memory_store_errors_total"
    labels = {"operation": "put", "engine": "sqlite", "code": "condition_failed"}
    assert grew(before, after, errors, **labels) == 1


class Endless:
    """An LLM that keeps talking until its reader stops."""

    name = "endless"

    async def stream(self, request: ChatRequest) -> AsyncIterator[LLMEvent]:
        while True:
            yield TextDelta("la ")
            await asyncio.sleep(0)

    async def list_models(self) -> list[str]:
        return []

    async def aclose(self) -> None:
        return None


async def test_an_llm_call_its_reader_leaves_is_counted_as_cancelled() -> None:
    before = parse(metrics.render().decode())
    # The caller stops reading (the stream is closed), then a task reading is cancelled.
    stream = cast(
        AsyncGenerator[LLMEvent, None], observed_llm.observed(Endless(), ChatRequest("m", []))
    )
    assert await anext(stream) == TextDelta("la ")
    await stream.aclose()
    started = asyncio.Event()

    async def read() -> None:
        async for _ in observed_llm.observed(Endless(), ChatRequest("m", [])):
            started.set()

    task = asyncio.create_task(read())
    await started.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    after = parse(metrics.render().decode())
    calls = "agent_memory_llm_calls_total"
    assert grew(before, after, calls, provider="endless", outcome="cancelled") == 2
    assert grew(before, after, calls, provider="endless", outcome="failed") == 0
    assert grew(before, after, calls, provider="endless", outcome="completed") == 0
    errors = label_sets(after, "agent_memory_llm_errors_total")
    assert not [labels for labels in errors if labels["provider"] == "endless"]


async def test_a_request_whose_client_left_before_its_answer_is_counted_as_499(
    log_lines: StringIO,
) -> None:
    async def left(scope: Scope, receive: Receive, send: Send) -> None:
        raise asyncio.CancelledError  # what the server does to a request whose client left

    scope: Scope = {
        "type": "http",
        "method": "GET",
        "path": "/gone",
        "headers": [(b"x-request-id", b"req-left")],
    }

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        raise AssertionError(f"nothing is sent to a client that left: {message}")

    before = parse(metrics.render().decode())
    with pytest.raises(asyncio.CancelledError):
        await Observability(left)(scope, receive, send)
    after = parse(metrics.render().decode())
    requests = "agent_memory_http_requests_total"
    assert grew(before, after, requests, method="GET", route="unmatched", status="499") == 1
    assert grew(before, after, requests, method="GET", route="unmatched", status="500") == 0
    assert "GET /gone 499" in log_lines.getvalue()
    assert "[req-left]" in log_lines.getvalue()
