"""Memory runs: durable, one at a time per subject and in order, retried, and the same on
both queue adapters (the in-process queue, and SQS FIFO on moto)."""

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.memory_runs import service as memory_runs
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.memory_layer.conftest import (
    add,
    context,
    initialize,
    run_of,
    said,
    seed_error,
    until_ended,
)
from tests.runtime.conftest import OPENAI_KEY


def on_openai(client: TestClient, fake: FakeLLM, user_id: str = "customer_123") -> str:
    """A subject whose memory runs use the OpenAI adapter, talking to the fake."""
    saved = client.put(
        "/settings/providers/openai", json={"api_key": OPENAI_KEY, "base_url": fake.base_url}
    )
    assert saved.status_code == 200, saved.text
    made = initialize(client, user_id, provider="openai", model="gpt-4o-mini")
    agent_id: str = made["agent_id"]
    return agent_id


def prompt_of(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["messages"])


def test_without_waiting_it_answers_at_once_and_the_run_completes(queued: TestClient) -> None:
    initialize(queued)
    started = time.monotonic()
    added = queued.post(
        "/memory/add",
        json={
            "user_id": "customer_123",
            "messages": [said("user", "My name is Sarah and I prefer email")],
            "wait_for_completion": False,
        },
    )
    assert time.monotonic() - started < 2
    assert added.status_code == 202, added.text
    body = added.json()
    assert body == {
        "success": True,
        "run_id": body["run_id"],
        "message": "Stored 1 message; the memory run is queued",
        "messages_count": 1,
        "status": "queued",
        "replaced": [],  # nothing was asked to be replaced (`supersedes`)
        "not_replaced": [],
        "notes": [],
    }
    run = until_ended(queued, body["run_id"])
    assert run["status"] == "completed"
    assert run["attempts"] == 1
    assert run["error"] is None
    assert run["edits"] == 3  # the name and the preference into human, a summary line
    assert run["started_at"]
    assert run["ended_at"]
    raw = queued.get("/memory/user-context", params={"user_id": "customer_123", "format": "raw"})
    assert raw.json()["context"] == "Name: Sarah\nPrefers: email"


def test_a_runs_states_move_from_queued_to_running_to_completed(
    queued: TestClient, fake_openai: FakeLLM
) -> None:
    on_openai(queued, fake_openai)
    fake_openai.replies.append(Reply(text="Nothing to remember.", delay_seconds=1.0))
    body = add(queued, [said("user", "Hello")], wait_for_completion=False)
    seen = [body["status"]]
    deadline = time.monotonic() + 30
    while seen[-1] != "completed":
        assert time.monotonic() < deadline, seen
        state = run_of(queued, body["run_id"])["status"]
        if state != seen[-1]:
            seen.append(state)
        time.sleep(0.02)
    assert seen == ["queued", "running", "completed"]
    assert run_of(queued, body["run_id"])["result"] == "Nothing to remember."


def test_two_adds_run_one_after_the_other_in_order(
    queued: TestClient, fake_openai: FakeLLM
) -> None:
    on_openai(queued, fake_openai)
    fake_openai.replies += [Reply(text="first done", delay_seconds=0.5), Reply(text="second done")]
    first = add(queued, [said("user", "The first thing")], wait_for_completion=False)
    second = add(queued, [said("user", "The second thing")], wait_for_completion=False)
    assert until_ended(queued, second["run_id"])["result"] == "second done"
    assert run_of(queued, first["run_id"])["result"] == "first done"
    assert len(fake_openai.requests) == 2
    assert "The first thing" in prompt_of(fake_openai.requests[0])
    assert "The second thing" in prompt_of(fake_openai.requests[1])
    assert "The first thing" not in prompt_of(fake_openai.requests[1])
    # The second began only once the first had its (slow) answer.
    assert fake_openai.request_times[1] - fake_openai.request_times[0] >= 0.5


def test_the_offline_runs_keep_their_order_in_the_summary(queued: TestClient) -> None:
    initialize(queued)
    runs = [
        add(queued, [said("user", f"Message {i}")], wait_for_completion=False) for i in range(4)
    ]
    for run in runs:
        until_ended(queued, run["run_id"])
    summary = queued.get("/memory/summary", params={"user_id": "customer_123", "format": "raw"})
    assert summary.json()["summary"].splitlines() == [
        f"1 message. User: Message {i}" for i in range(4)
    ]


def test_a_search_right_after_add_finds_the_messages(
    queued: TestClient, fake_openai: FakeLLM
) -> None:
    on_openai(queued, fake_openai)
    fake_openai.replies.append(Reply(text="done", delay_seconds=1.5))
    body = add(
        queued,
        [said("user", "My order 12345-ABC never arrived"), said("assistant", "Sorry to hear it")],
        wait_for_completion=False,
    )
    found = queued.get(
        "/memory/search", params={"user_id": "customer_123", "query": "order 12345-ABC"}
    ).json()
    assert found["results"][0] == "My order 12345-ABC never arrived"
    got = context(queued, query="order")
    assert got["relevant_memories"][0] == "User: My order 12345-ABC never arrived"
    assert got["pending_runs"] == 1  # the run still works on it
    assert run_of(queued, body["run_id"])["status"] in ("queued", "running")
    until_ended(queued, body["run_id"])
    assert context(queued, query="order")["pending_runs"] == 0


def test_without_archival_nothing_is_searchable(api: TestClient) -> None:
    initialize(api)
    add(api, [said("user", "A secret plan")], store_in_archival=False)
    assert (
        api.get(
            "/memory/search", params={"user_id": "customer_123", "query": "secret plan"}
        ).json()["results"]
        == []
    )


def test_a_failed_attempt_is_tried_again(
    queued: TestClient, fake_openai: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_runs, "FAILED_RETRY_SECONDS", 0.05)
    on_openai(queued, fake_openai)
    fake_openai.replies += [Reply(status=400), Reply(text="fine now")]
    body = add(queued, [said("user", "Hello")])
    assert body["status"] == "completed"
    run = run_of(queued, body["run_id"])
    assert run["attempts"] == 2
    assert run["result"] == "fine now"
    assert run["error"]  # the failed attempt's, kept


def test_a_run_failing_every_attempt_fails(
    queued: TestClient, fake_openai: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_runs, "FAILED_RETRY_SECONDS", 0.05)
    on_openai(queued, fake_openai)
    fake_openai.replies += [Reply(status=400)] * 3 + [Reply(text="too late")]
    added = queued.post(
        "/memory/add", json={"user_id": "customer_123", "messages": [said("user", "Hello")]}
    )
    assert added.status_code == 200, added.text
    body = added.json()
    assert body["success"] is False
    assert body["status"] == "failed"
    assert body["message"].startswith("Stored 1 message, but the memory run failed: ")
    run = run_of(queued, body["run_id"])
    assert (run["status"], run["attempts"]) == ("failed", 3)
    assert len(fake_openai.requests) == 3
    # The subject's next run is not held up by it.
    fake_openai.replies.clear()
    assert add(queued, [said("user", "Again")])["status"] == "completed"


def test_a_wait_past_its_bound_answers_202(
    tmp_path: Any, clock: Any, fake_openai: FakeLLM, request: pytest.FixtureRequest
) -> None:
    from tests.memory_layer.conftest import settings_for
    from tests.runtime.conftest import running

    with running(settings_for(tmp_path, memory_run_wait_seconds=0.2), clock) as client:
        on_openai(client, fake_openai)
        fake_openai.replies.append(Reply(text="slow", delay_seconds=1.0))
        added = client.post(
            "/memory/add", json={"user_id": "customer_123", "messages": [said("user", "Hi")]}
        )
        assert added.status_code == 202, added.text
        assert added.json()["status"] in ("queued", "running")
        assert until_ended(client, added.json()["run_id"])["status"] == "completed"


def test_runs_of_unknown_ids_are_not_found(api: TestClient) -> None:
    agent_id = initialize(api)["agent_id"]
    seed_error(api.get(f"/memory/runs/run_{agent_id}_nothing"), 404, "memory_run_not_found")
    seed_error(api.get("/memory/runs/run_deadbeef_x"), 404, "memory_run_not_found")
