"""What happens when the memory server fails during a context: the model call always goes
on; every failure is logged as a warning, counted, and readable on the context object.
And a server in google mode, reached with and without an API key."""

import asyncio
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai.resources.chat.completions.completions as chat_completions
import pytest
from anthropic import Anthropic
from openai import AsyncOpenAI, OpenAI

from api.auth.service import create_api_key
from api.config import Settings
from api.kit.clock import SystemClock
from api.repositories import Repositories
from api.store import build_table
from api.users.service import ensure_local_user
from client import MemoryServerError, learning
from client.server import MAX_CONTENT_CHARS
from tests.client.conftest import ask, ask_claude
from tests.client.server_process import MemoryServer, memory_server
from tests.fakes.llm_servers import FakeLLM, Reply

EMAIL = "ada@example.com"


def test_an_agent_deleted_mid_context_the_calls_go_on_and_the_failures_are_told(
    server: MemoryServer,
    agent: str,
    oai: OpenAI,
    fake_openai: FakeLLM,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_openai.replies.append(Reply(text="Answered without memory."))
    with (
        caplog.at_level(logging.WARNING, logger="client"),
        learning(agent, server_url=server.url) as memory,
    ):
        deleted = server.http.delete(f"/agents/{memory.agent_id}")
        assert deleted.status_code == 204, deleted.text
        answer = oai.chat.completions.create(model="m", messages=ask("Still there?"))

    assert answer.choices[0].message.content == "Answered without memory."
    assert fake_openai.requests[-1]["messages"] == ask("Still there?")
    assert (memory.stored, memory.context_failures, memory.capture_failures) == (0, 1, 2)
    assert all("404 agent_not_found" in error for error in memory.errors)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("agent_not_found" in w for w in warned) == 3
    assert any(
        "ended: 0 message(s) stored, 2 not stored, 1 call(s) without memory" in w for w in warned
    )


@contextmanager
def thawed_at_the_end(running: MemoryServer) -> Iterator[None]:
    try:
        yield
    finally:
        os.killpg(running.process.pid, signal.SIGCONT)


def freeze(running: MemoryServer) -> None:
    """The server stopped (SIGSTOP): connections are accepted, nothing is answered."""
    os.killpg(running.process.pid, signal.SIGSTOP)


def test_a_frozen_server_delays_a_call_by_the_timeout_at_most_and_the_exit_by_the_flush(
    tmp_path: Path, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    fake_openai.replies += [Reply(text="one"), Reply(text="two")]
    with memory_server(tmp_path / "frozen.db", backend="none") as running:
        # Each capture (one request a message) waits out its 2s, one after the other: the
        # first is still waiting when the flush's half second ends, however slowly a busy
        # machine answers the second call (with 0.5s each, a second call slower than a
        # second let every capture time out before the flush could give up on one).
        memory = learning(agent, server_url=running.url, timeout=2.0, flush_timeout=0.5)
        with thawed_at_the_end(running), memory:
            freeze(running)
            first = oai.chat.completions.create(model="m", messages=ask("Frozen, with memory?"))
            assert memory.context_failures == 1  # timed out, and the call went on
            memory.capture_only = True
            second = oai.chat.completions.create(model="m", messages=ask("Capture only."))
            # The capture waits on the frozen server; the call did not wait for it.
            assert memory.pending > 0

    assert (first.choices[0].message.content, second.choices[0].message.content) == ("one", "two")
    assert memory.stored == 0
    assert memory.capture_failures == 4  # two questions and two answers, none stored
    assert memory.pending == 0  # what the flush gave up on is counted, not left pending
    assert any("not stored within 0.5s of the context's end" in e for e in memory.errors)


def test_messages_longer_than_the_server_takes_are_cut_not_lost(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    huge = "word " * 15_000  # 75,000 characters: above the server's 50,000 and 32,000
    fake_openai.replies.append(Reply(text="A long read."))

    with learning(agent, server_url=server.url) as memory:
        oai.chat.completions.create(model="m", messages=ask(huge))

    assert (memory.context_failures, memory.capture_failures, memory.stored) == (0, 0, 2)
    stored = server.messages(agent)[0]["content"]
    assert len(stored) == MAX_CONTENT_CHARS
    assert stored.endswith("…")


# --- google mode: a machine client with an API key ------------------------------------------


async def make_api_key(db: Path) -> str:
    table = build_table(Settings(store="sqlite", sqlite_path=db, encryption_key="k" * 40))
    repos = Repositories.over(table)
    try:
        await table.create()
        clock = SystemClock()
        await ensure_local_user(repos, EMAIL, clock)
        _, secret = await create_api_key(repos, EMAIL, "learning", clock)
    finally:
        await table.close()
    return secret


@pytest.fixture(scope="module")
def saas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryServer, str]]:
    """A server in google mode, and an API key of one of its users."""
    db = tmp_path_factory.mktemp("saas") / "saas.db"
    secret = asyncio.run(make_api_key(db))
    google = {
        "AUTH_MODE": "google",
        "PUBLIC_URL": "https://api.example.com",
        "JWT_SECRET": "j" * 40,
        "GOOGLE_CLIENT_ID": "client-id",
        "GOOGLE_CLIENT_SECRET": "client-secret",
        "FRONTEND_URL": "https://app.example.com",
    }
    with memory_server(db, backend="none", env=google) as running:
        yield running, secret


def test_an_api_key_reaches_a_server_in_google_mode(
    saas: tuple[MemoryServer, str], agent: str, oai: OpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    running, secret = saas
    with learning(agent, server_url=running.url, api_key=secret) as memory:
        oai.chat.completions.create(model="m", messages=ask("Through my key."))
    monkeypatch.setenv("MEMORY_API_KEY", secret)
    with learning(agent, server_url=running.url) as again:
        oai.chat.completions.create(model="m", messages=ask("Through MEMORY_API_KEY."))

    assert (memory.stored, again.stored) == (2, 2)
    listed = running.http.get(
        f"/messages/{agent}", headers={"authorization": f"Bearer {secret}"}
    ).json()
    assert [m["content"] for m in listed[::-1] if m["role"] == "user"] == [
        "Through my key.",
        "Through MEMORY_API_KEY.",
    ]


@pytest.mark.parametrize(
    ("key", "code"), [(None, "not_authenticated"), ("amk_not-a-key", "invalid_api_key")]
)
def test_without_a_valid_api_key_entry_fails_saying_how_to_give_one(
    saas: tuple[MemoryServer, str],
    agent: str,
    key: str | None,
    code: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MEMORY_API_KEY", raising=False)
    running, _ = saas
    with pytest.raises(MemoryServerError) as refused:
        learning(agent, server_url=running.url, api_key=key).__enter__()
    assert (refused.value.status, refused.value.code) == (401, code)
    assert "api_key=" in str(refused.value)
    assert "MEMORY_API_KEY" in str(refused.value)


async def test_a_call_still_running_when_the_block_ends_is_counted_not_lost(
    server: MemoryServer, agent: str, aoai: AsyncOpenAI, fake_openai: FakeLLM
) -> None:
    fake_openai.replies.append(Reply(text="Late.", delay_seconds=1.0))
    async with learning(agent, server_url=server.url, capture_only=True) as memory:
        # The task inherits the block's context, and outlives the block.
        late = asyncio.create_task(aoai.chat.completions.create(model="m", messages=ask("Slow?")))
        # The fake serves from a thread of its own: there is no event of this loop to await.
        while not fake_openai.requests:  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    answer = await late
    assert answer.choices[0].message.content == "Late."
    assert (memory.stored, memory.capture_failures) == (0, 2)
    assert memory.errors[-1] == "2 message(s) arrived after the context ended"


def test_without_an_sdk_imported_nothing_is_patched_and_it_says_so(server: MemoryServer) -> None:
    script = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "from client import learning\n"
        f"with learning('no-sdk', server_url={server.url!r}) as memory:\n"
        "    print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"  # the client imports neither SDK
    assert "neither openai nor anthropic is imported" in result.stderr


class TracedStream:
    """Another library's stream wrapper (a tracer's): it iterates the SDK's stream and
    hides its insides, so the interceptor cannot watch it."""

    def __init__(self, inner: Iterable[Any]) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[Any]:
        yield from self._inner


def test_a_stream_it_cannot_watch_goes_on_unchanged_and_the_failure_is_told(
    server: MemoryServer,
    agent: str,
    oai: OpenAI,
    fake_openai: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    owner = chat_completions.Completions
    sdk_create = vars(owner)["create"]

    def traced(self: object, *args: Any, **kwargs: Any) -> Any:
        result = sdk_create(self, *args, **kwargs)
        return TracedStream(result) if kwargs.get("stream") else result

    monkeypatch.setattr(owner, "create", traced)  # installed before learning() patches
    fake_openai.replies.append(Reply(text="Every word of it."))

    with (
        caplog.at_level(logging.WARNING, logger="client"),
        learning(agent, server_url=server.url, capture_only=True) as memory,
    ):
        stream = oai.chat.completions.create(
            model="m", messages=ask("Through a tracer."), stream=True
        )
        assert isinstance(stream, TracedStream)
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    assert text == "Every word of it."
    assert (memory.capture_failures, memory.stored) == (1, 1)
    assert "the stream could not be watched" in memory.errors[0]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("could not be watched" in w and agent in w for w in warned)
    assert server.said(agent) == [("user", "Through a tracer.")]  # the question is kept


def test_memory_it_cannot_put_in_the_request_is_left_out_and_the_failure_told(
    server: MemoryServer,
    agent: str,
    claude: Anthropic,
    fake_anthropic: FakeLLM,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with learning(agent, server_url=server.url):
        claude.messages.create(model="c", max_tokens=50, messages=ask_claude("I drink green tea."))
    # One block as a bare object: a shape the interceptor cannot add to (nor replace).
    system: Any = {"type": "text", "text": "Be brief."}
    fake_anthropic.replies.append(Reply(text="Green tea."))

    with (
        caplog.at_level(logging.WARNING, logger="client"),
        learning(agent, server_url=server.url) as memory,
    ):
        answer = claude.messages.create(
            model="c", max_tokens=50, system=system, messages=ask_claude("Which tea do I drink?")
        )

    assert answer.content[0].type == "text"
    assert answer.content[0].text == "Green tea."
    sent = fake_anthropic.requests[-1]
    assert sent["system"] == system  # sent as the caller wrote it
    assert sent["messages"] == ask_claude("Which tea do I drink?")
    assert (memory.context_failures, memory.capture_failures, memory.stored) == (1, 0, 2)
    assert "could not be put in the request" in memory.errors[0]
    assert "system is a dict" in memory.errors[0]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("could not be put in the request" in w for w in warned)
