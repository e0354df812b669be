"""Resumable streams: a turn's events are kept in the table, so a client that lost its
stream gets what it missed from `GET /runs/{id}/events` (Last-Event-ID) and then the live
rest, from another app instance on the same store too. Real uvicorn servers, real clock."""

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI

from api.config import Settings
from api.main import create_app
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.fakes.serving import serve_in_thread
from tests.runtime.conftest import Event, messages, parse_sse, use_openai

STORY = " ".join(f"word{i}" for i in range(60))  # at 40 ms a word: 2.4 s, past the grace


def app_server(settings: Settings, name: str) -> Any:
    def build(root: str) -> tuple[str, FastAPI]:
        return root, create_app(settings)

    return serve_in_thread(name, build, "/health", lifespan="on")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        sqlite_path=tmp_path / "shared.db",
        encryption_key="k" * 40,
        run_resume_seconds=1,
        sse_coalesce_ms=0,  # one event per chunk: the tests count them
    )


@pytest.fixture
def two_servers(settings: Settings) -> Iterator[tuple[str, str]]:
    """Two app instances (replicas) on one SQLite file."""
    with app_server(settings, "replica-a") as a, app_server(settings, "replica-b") as b:
        yield a, b


Replicas = tuple[httpx2.Client, httpx2.Client, str]


@pytest.fixture
def replicas(two_servers: tuple[str, str], fake_openai: FakeLLM) -> Replicas:
    """A client of each replica, and an agent on the fake OpenAI."""
    a, b = (httpx2.Client(base_url=root, timeout=30) for root in two_servers)
    return a, b, use_openai(a, fake_openai)


def read_events(response: httpx2.Response, until: int | None = None) -> list[Event]:
    """SSE events as they arrive; with `until`, stops after that many (the client leaves)."""
    found: list[Event] = []
    buffer = ""
    for chunk in response.iter_text():
        buffer += chunk
        *blocks, buffer = buffer.replace("\r\n", "\n").split("\n\n")
        for block in blocks:
            found += parse_sse(block + "\n\n")[0]
            if until is not None and len(found) >= until:
                return found
    return found


def text_of(found: list[Event]) -> str:
    return "".join(e.data["text"] for e in found if e.name == "text.delta")


def ids_of(found: list[Event]) -> list[int]:
    return [int(e.id or 0) for e in found]


def start_turn(http: httpx2.Client, agent_id: str, headers: dict[str, str] | None = None) -> Any:
    return http.stream(
        "POST",
        "/chat",
        json={"agent_id": agent_id, "prompt": "Tell me a story", "session_id": "story"},
        headers=headers or {},
    )


def test_a_stream_resumed_on_another_replica_goes_on_to_the_end(
    replicas: Replicas, fake_openai: FakeLLM
) -> None:
    a, b, agent_id = replicas
    fake_openai.replies.append(Reply(text=STORY, chunk_delay_seconds=0.04))

    with start_turn(a, agent_id, {"Idempotency-Key": "story-1"}) as response:
        run_id = response.headers["Run-Id"]
        seen = read_events(response, until=6)  # then the connection drops
    assert [e.name for e in seen[:2]] == ["run.started", "text.delta"]

    with b.stream(
        "GET", f"/runs/{run_id}/events", headers={"Last-Event-ID": str(seen[-1].id)}
    ) as rest:
        assert rest.status_code == 200
        resumed = read_events(rest)

    # The turn outlived the grace its client left it (1 s), because B's reader followed it.
    # Nothing twice, nothing missing: the ids go on from where the client was.
    assert ids_of(seen + resumed) == list(range(1, len(seen) + len(resumed) + 1))
    assert resumed[-1].name == "run.completed"
    assert text_of(seen + resumed) == STORY
    assert b.get(f"/runs/{run_id}").json()["state"] == "completed"
    stored = messages(b, seen[0].data["conversation_id"])
    assert [(m["role"], m["content"], m["interrupted"]) for m in stored] == [
        ("user", "Tell me a story", False),
        ("assistant", STORY, False),
    ]


def test_a_finished_run_is_replayed_whole_with_the_same_ids_and_data(
    replicas: Replicas, fake_openai: FakeLLM
) -> None:
    a, b, agent_id = replicas
    fake_openai.replies.append(Reply(text="Short and sweet."))
    with start_turn(a, agent_id) as response:
        run_id = response.headers["Run-Id"]
        original = read_events(response)

    replayed = parse_sse(b.get(f"/runs/{run_id}/events").text)[0]
    assert replayed == original
    after_three = parse_sse(b.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "3"}).text)[0]
    assert after_three == original[3:]


def test_without_a_key_a_client_leaving_stops_the_turn_and_the_replay_says_so(
    replicas: Replicas, fake_openai: FakeLLM
) -> None:
    a, b, agent_id = replicas
    fake_openai.replies.append(Reply(text=STORY, chunk_delay_seconds=0.04))
    with start_turn(a, agent_id) as response:
        run_id = response.headers["Run-Id"]
        seen = read_events(response, until=4)

    deadline = time.monotonic() + 10
    while b.get(f"/runs/{run_id}").json()["state"] == "running":
        assert time.monotonic() < deadline, "the turn never stopped"
        time.sleep(0.05)
    replayed = parse_sse(b.get(f"/runs/{run_id}/events").text)[0]
    assert replayed[: len(seen)] == seen
    assert [(e.name, e.data.get("code")) for e in replayed[-2:]] == [
        ("error", "interrupted"),
        ("run.failed", "interrupted"),
    ]
    assert b.get(f"/runs/{run_id}").json()["state"] == "interrupted"
    answer = messages(b, seen[0].data["conversation_id"])[-1]
    assert (answer["role"], answer["interrupted"]) == ("assistant", True)
    assert STORY.startswith(answer["content"])
    assert answer["content"] != STORY


def test_with_a_key_nobody_coming_back_stops_the_turn_after_the_grace(
    replicas: Replicas, fake_openai: FakeLLM
) -> None:
    a, _, agent_id = replicas
    fake_openai.replies.append(Reply(text=STORY, stall_after_chunks=5))
    with start_turn(a, agent_id, {"Idempotency-Key": "story-2"}) as response:
        run_id = response.headers["Run-Id"]
        read_events(response, until=3)
    time.sleep(0.3)  # within the grace (1 s): still running, waiting for its client
    assert a.get(f"/runs/{run_id}").json()["state"] == "running"
    deadline = time.monotonic() + 10
    while a.get(f"/runs/{run_id}").json()["state"] == "running":
        assert time.monotonic() < deadline, "the turn outlived its grace"
        time.sleep(0.1)
    assert a.get(f"/runs/{run_id}").json()["state"] == "interrupted"


def test_the_answer_being_streamed_is_kept_as_a_draft(
    replicas: Replicas, fake_openai: FakeLLM
) -> None:
    a, b, agent_id = replicas
    # Role, "word0", " word1", " word2": then the model hangs mid-answer.
    fake_openai.replies.append(Reply(text=STORY, stall_after_chunks=4))
    with start_turn(a, agent_id) as response:
        seen = read_events(response, until=4)
        conversation_id = seen[0].data["conversation_id"]
        deadline = time.monotonic() + 5
        while len(found := messages(b, conversation_id)) < 2:
            assert time.monotonic() < deadline, "no draft was saved"
            time.sleep(0.05)
        draft = found[-1]
        assert (draft["role"], draft["content"], draft["interrupted"]) == (
            "assistant",
            "word0 word1 word2",
            True,
        )


def test_a_bad_last_event_id_or_an_unknown_run_is_refused(
    replicas: Replicas, fake_openai: FakeLLM
) -> None:
    a, _, agent_id = replicas
    with start_turn(a, agent_id) as response:
        run_id = response.headers["Run-Id"]
        read_events(response)
    for bad in ("abc", "-1", "1.5", "1" * 10):
        refused = a.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": bad})
        assert refused.status_code == 400, bad
        assert refused.json()["code"] == "invalid_last_event_id"
    for path in ("/runs/nope", "/runs/nope/events"):
        missing = a.get(path)
        assert missing.status_code == 404
        assert missing.json()["code"] == "run_not_found"
    ended = a.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "999"})
    assert ended.status_code == 200
    assert parse_sse(ended.text)[0] == []
    assert json.loads(a.get(f"/runs/{run_id}").text)["run_id"] == run_id


def test_a_turn_sent_again_with_its_key_reattaches_to_the_same_run(
    replicas: Replicas, fake_openai: FakeLLM
) -> None:
    a, b, agent_id = replicas
    fake_openai.replies.append(Reply(text=STORY, chunk_delay_seconds=0.04))
    key = {"Idempotency-Key": "story-3"}
    with start_turn(a, agent_id, key) as response:
        run_id = response.headers["Run-Id"]
        seen = read_events(response, until=6)

    with start_turn(b, agent_id, key) as again:  # the connection dropped: the client retries
        assert again.status_code == 200
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["Run-Id"] == run_id
        whole = read_events(again)
    assert whole[: len(seen)] == seen  # the same run, from its first event, to its end
    assert ids_of(whole) == list(range(1, len(whole) + 1))
    assert whole[-1].name == "run.completed"
    assert text_of(whole) == STORY
    conversation_id = seen[0].data["conversation_id"]
    assert [m["role"] for m in messages(b, conversation_id)] == ["user", "assistant"]

    with start_turn(a, agent_id, key) as later:  # once it ended: the same stream again
        assert read_events(later) == whole
    assert len(fake_openai.requests) == 1
