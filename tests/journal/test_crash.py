"""A server killed mid-turn (kill -9, a real process): what its client saw stays stored,
and the next start marks the turn interrupted. And the sweep that does it, on both
engines, for runs of processes dead, alive, elsewhere and here."""

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx2
import pytest

from api.journal import reader as service
from api.journal.models import Run, RunEvents
from api.journal.process import ProcessId, this_process
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from tests.fakes import serving
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.fakes.serving import ServerProcess
from tests.journal.test_resume import STORY, read_events, start_turn
from tests.runtime.conftest import Store, messages, parse_sse, use_openai


@contextmanager
def server_process(db: Path) -> Iterator[tuple[httpx2.Client, ServerProcess]]:
    env = {
        "STORE": "sqlite",
        "SQLITE_PATH": str(db),
        "ENCRYPTION_KEY": "k" * 40,
        "MEMORY_EMBEDDING_BACKEND": "none",
        "SSE_COALESCE_MS": "0",  # one event per chunk: the tests count them
    }
    # Two workers, as `serve` runs by default on a machine with two cores: a process group,
    # killed whole.
    with (
        serving.server_process(env, workers=2, own_group=True) as server,
        httpx2.Client(base_url=server.root, timeout=30) as http,
    ):
        yield http, server


def kill_9(server: ServerProcess) -> None:
    """The server and its workers, all at once, as a lost machine would."""
    server.kill_9()


def state_once_settled(http: httpx2.Client, run_id: str) -> str:
    """The run's state once the start-up sweep has looked at it."""
    deadline = time.monotonic() + 10
    while (state := str(http.get(f"/runs/{run_id}").json()["state"])) == "running":
        assert time.monotonic() < deadline, "the run was never marked"
        time.sleep(0.1)
    return state


def test_killed_right_after_run_started_the_question_is_kept(
    tmp_path: Path, fake_openai: FakeLLM
) -> None:
    db = tmp_path / "crash.db"
    with server_process(db) as (http, process):
        agent_id = use_openai(http, fake_openai)
        fake_openai.replies.append(Reply(text=STORY, delay_seconds=5))
        with start_turn(http, agent_id) as response:
            (started,) = read_events(response, until=1)
            kill_9(process)
    assert started.name == "run.started"
    run_id = started.data["run_id"]

    with server_process(db) as (http, _):
        assert state_once_settled(http, run_id) == "interrupted"
        stored = messages(http, started.data["conversation_id"])
        assert [(m["role"], m["content"]) for m in stored] == [("user", "Tell me a story")]
        replayed = parse_sse(http.get(f"/runs/{run_id}/events").text)[0]
        assert [(e.name, e.data.get("code")) for e in replayed] == [
            ("run.started", None),
            ("error", "interrupted"),
            ("run.failed", "interrupted"),
        ]
        # The sweep that ended the run released its conversation too: the next turn
        # starts at once, not when the dead turn's lease lapses 30 s later.
        fake_openai.replies.append(Reply(text="Once upon a time."))
        with start_turn(http, agent_id) as again:
            assert again.status_code == 200
            assert read_events(again)[-1].name == "run.completed"


def test_killed_mid_answer_what_the_client_saw_is_kept_and_marked(
    tmp_path: Path, fake_openai: FakeLLM
) -> None:
    db = tmp_path / "crash.db"
    with server_process(db) as (http, process):
        agent_id = use_openai(http, fake_openai)
        # The role, then "word0" to " word4"; then the model hangs.
        fake_openai.replies.append(Reply(text=STORY, stall_after_chunks=6))
        with start_turn(http, agent_id) as response:
            seen = read_events(response, until=6)
            time.sleep(1.4)  # past the journal's second: what was sent is written
            kill_9(process)
    run_id = seen[0].data["run_id"]
    assert [e.name for e in seen] == ["run.started"] + ["text.delta"] * 5

    with server_process(db) as (http, _):
        assert state_once_settled(http, run_id) == "interrupted"
        stored = messages(http, seen[0].data["conversation_id"])
        assert [(m["role"], m["content"], m["interrupted"]) for m in stored] == [
            ("user", "Tell me a story", False),
            ("assistant", "word0 word1 word2 word3 word4", True),
        ]
        replayed = parse_sse(http.get(f"/runs/{run_id}/events").text)[0]
        assert replayed[:6] == seen
        assert [e.name for e in replayed[6:]] == ["error", "run.failed"]
        # The conversation goes on once the dead turn's lease has lapsed... or at once,
        # when the client asks to wait its turn.
        fake_openai.replies.append(Reply(text="Where were we?"))
        with http.stream(
            "POST",
            "/chat",
            json={"agent_id": agent_id, "prompt": "Go on", "session_id": "story", "wait": True},
            timeout=60,
        ) as again:
            assert read_events(again)[-1].name == "run.completed"


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def killed_not_reaped(child: "subprocess.Popen[bytes]") -> None:
    """Kill `child` and wait until it is a zombie: dead, not yet waited for."""
    child.kill()
    deadline = time.monotonic() + 10
    stat = Path(f"/proc/{child.pid}/stat")
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child never became a zombie"
        time.sleep(0.01)


def test_a_process_killed_but_not_yet_reaped_is_known_dead() -> None:
    """A worker killed with its supervisor is a zombie until init reaps it: a server
    restarted meanwhile must not take it for alive."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    here = this_process()
    try:
        assert not here.knows_dead(here.host, child.pid, "t")  # running
        killed_not_reaped(child)
        assert here.knows_dead(here.host, child.pid, "t")
    finally:
        child.kill()
        child.wait()
    assert here.knows_dead(here.host, child.pid, "t")  # reaped: gone


def test_someone_elses_process_killed_but_not_yet_reaped_is_known_dead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Signalling another user's process is refused (PermissionError): whether it is a
    zombie is still read from /proc, which anyone may read."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    here = this_process()

    def refused(pid: int, signal: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    try:
        with monkeypatch.context() as patched:
            patched.setattr(os, "kill", refused)  # as for a process of another user
            assert not here.knows_dead(here.host, child.pid, "t")  # running
        killed_not_reaped(child)
        with monkeypatch.context() as patched:
            patched.setattr(os, "kill", refused)
            assert here.knows_dead(here.host, child.pid, "t")
    finally:
        child.kill()
        child.wait()


async def test_the_sweep_ends_only_runs_whose_process_is_gone(
    store: Store, clock: FrozenClock
) -> None:
    table = store.open()
    repos = Repositories.over(table)
    await table.create()
    here = this_process()
    cases = {
        "elsewhere": ProcessId("another-host", 4242, "t1"),
        "dead-here": ProcessId(here.host, dead_pid(), "t2"),
        "restarted": ProcessId(here.host, here.pid, "an earlier start"),
        "alive": here,
    }
    for name, process in cases.items():
        run = Run(
            run_id=name,
            user_email="ada@example.com",
            agent_id="a1",
            conversation_id=f"c-{name}",
            created_at=datetime.fromtimestamp(clock.now(), UTC),
        )
        started = RunEvents(run_id=name, first=1, events=[["run.started", "{}"]])
        await repos.journal.open_run(run, started, process)
        assert await repos.conversations.take_lease(run.conversation_id, name, clock.now() + 30)

    assert await service.sweep_dead(repos, clock) == 2
    states = {name: (await repos.journal.get(name)).state for name in cases}  # type: ignore[union-attr]
    assert states == {
        "elsewhere": "running",  # its lease is held: it may well be alive
        "dead-here": "interrupted",
        "restarted": "interrupted",
        "alive": "running",
    }
    batches, _ = await repos.journal.read_from("dead-here", 1)
    ended = [(e.number, e.event) for b in batches for e in b.numbered()]
    # Numbered well past what the dead process may have sent without writing it down.
    assert ended == [(1, "run.started"), (1002, "error"), (1003, "run.failed")]

    clock.advance(20)  # this process renews its lease; the other host's stopped renewing
    assert await repos.conversations.renew_lease("c-alive", "alive", clock.now() + 30)
    clock.advance(11)
    assert await service.sweep_dead(repos, clock) == 1
    assert (await repos.journal.get("elsewhere")).state == "interrupted"  # type: ignore[union-attr]
    assert await repos.journal.end("alive", "completed", clock.now())
    assert {m.run_id for m in await repos.journal.live_runs()} == set()
    await table.close()


async def test_two_processes_finding_one_dead_run_end_it_once(
    store: Store, clock: FrozenClock
) -> None:
    """Two workers start together and both sweep: the run gets one ending, not two."""
    table = store.open()
    repos = Repositories.over(table)
    await table.create()
    run = Run(
        run_id="r-dead",
        user_email="ada@example.com",
        agent_id="a1",
        conversation_id="c-dead",
        created_at=datetime.fromtimestamp(clock.now(), UTC),
    )
    started = RunEvents(run_id="r-dead", first=1, events=[["run.started", "{}"]])
    await repos.journal.open_run(run, started, ProcessId(this_process().host, dead_pid(), "t"))
    ended = await asyncio.gather(*(service.sweep_dead(repos, clock) for _ in range(4)))
    assert sum(ended) == 1
    batches, final = await repos.journal.read_from("r-dead", 1)
    assert [e.event for b in batches for e in b.numbered()] == [
        "run.started",
        "error",
        "run.failed",
    ]
    assert final is not None
    assert final.state == "interrupted"
    await table.close()
