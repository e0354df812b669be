"""When the capture worker sends: never while the context's memory fetch is under way, and,
when the calls follow one another faster than a capture is stored, not between them at
all: the exchanges are held, then sent together (in order, within the server's batch
limit) at a flush, at the exit, once held long enough or once there are enough of them.
Refused together, they are sent again one by one only for what one exchange can cause. A
proxy in front of the real server makes each capture slow (`batch_delay`), refuses the
batches it is told to, and records every request."""

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from openai import OpenAI

from client import capture, learning
from client.interceptor import Learning
from client.server import MemoryServer as Client
from tests.client.conftest import ask
from tests.client.proxy import Proxy, recording_proxy
from tests.client.server_process import MemoryServer
from tests.fakes.llm_servers import FakeLLM

BATCH = "POST /messages/batch"
SLOW_CAPTURE = 0.5  # seconds the proxy adds to each capture: far more than a call's gap


@pytest.fixture(autouse=True)
def patient_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker waits up to 0.3 s (not 5 ms) for the next call's fetch to start, so that
    a loaded machine, slow between two calls, does not change what is tested. Not longer:
    the gap before the first held call includes a flush, which waits out this grace and
    a capture, and the median of that gap and the next must stay below 1.5 captures.
    Held exchanges wait for a flush or the exit (a minute at most, not a second) unless a
    test says otherwise, so that a slow machine's calls do not send them early."""
    monkeypatch.setattr(capture, "FETCH_GRACE", 0.3)
    monkeypatch.setattr(capture, "HOLD_SECONDS", 60.0)


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


@contextmanager
def timed_capture(
    server: MemoryServer, agent: str, oai: OpenAI, first: str
) -> Iterator[tuple[Proxy, Learning]]:
    """A learning() context behind a proxy that makes each capture slow, after one call
    whose capture was flushed: the worker knows what a capture takes."""
    with (
        recording_proxy(server.url, batch_delay=SLOW_CAPTURE) as proxy,
        learning(agent, server_url=proxy.url) as memory,
    ):
        oai.chat.completions.create(model="m", messages=ask(first))
        assert memory.flush(10)
        yield proxy, memory


def test_captures_of_quick_calls_are_held_and_sent_at_a_flush_and_at_the_exit(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with timed_capture(server, agent, oai, "First.") as (proxy, memory):
        assert proxy.seen.count(BATCH) == 1  # the first call's capture, flushed
        for text in ("Second.", "Third.", "Fourth."):
            oai.chat.completions.create(model="m", messages=ask(text))
        # Sent between two calls, a capture would still be on the server at the next
        # fetch: none was, and all three wait, counted as pending.
        assert proxy.seen.count(BATCH) == 1
        assert memory.pending == 6
        assert memory.flush(10)
        assert proxy.seen.count(BATCH) == 2  # the three together, in one request
        assert (memory.stored, memory.pending) == (8, 0)
        oai.chat.completions.create(model="m", messages=ask("Fifth."))
        oai.chat.completions.create(model="m", messages=ask("Sixth."))

    assert (memory.stored, memory.capture_failures, memory.pending) == (12, 0, 0)
    said = ("First.", "Second.", "Third.", "Fourth.", "Fifth.", "Sixth.")
    assert server.said(agent) == [
        pair for text in said for pair in (("user", text), ("assistant", "ok"))
    ]
    fetches = [call for call in proxy.seen if call.startswith("POST /context/")]
    assert len(fetches) == 6


def test_held_captures_go_out_in_requests_of_the_servers_batch_limit_whole_exchanges(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with timed_capture(server, agent, oai, "Question 0.") as (proxy, memory):
        for n in range(1, 8):
            oai.chat.completions.create(model="m", messages=ask(f"Question {n}."))
        assert memory.pending == 14

    # 14 held messages in whole exchanges of two, at most 10 a request: 10, then 4.
    assert proxy.seen.count(BATCH) == 3
    assert (memory.stored, memory.capture_failures) == (16, 0)
    assert [text for role, text in server.said(agent) if role == "user"] == [
        f"Question {n}." for n in range(8)
    ]


def test_captures_held_too_long_are_sent_while_the_calls_go_on(
    server: MemoryServer,
    agent: str,
    oai: OpenAI,
    fake_openai: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(capture, "HOLD_SECONDS", 0.2)
    with timed_capture(server, agent, oai, "Timing the capture.") as (proxy, memory):
        calls = 0
        # The calls never leave a gap long enough; the held ones still go, within a
        # few seconds at most (the loop is bounded).
        while proxy.seen.count(BATCH) < 2 and calls < 500:
            oai.chat.completions.create(model="m", messages=ask(f"Call {calls}."))
            calls += 1
        assert proxy.seen.count(BATCH) >= 2, "nothing held was sent while the calls went on"

    # The second request carried several exchanges: they were held, not sent one by one.
    assert proxy.batch_sizes[1] > 2, proxy.batch_sizes
    assert memory.capture_failures == 0
    assert memory.stored == 2 + 2 * calls


def test_held_captures_reaching_the_cap_are_sent_without_a_flush(
    server: MemoryServer,
    agent: str,
    oai: OpenAI,
    fake_openai: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(capture, "MAX_HELD_MESSAGES", 6)
    with timed_capture(server, agent, oai, "Question 0.") as (proxy, memory):
        for n in range(1, 6):
            oai.chat.completions.create(model="m", messages=ask(f"Question {n}."))
        # Held for a minute otherwise: the third exchange held reached 6 messages.
        assert wait_for(lambda: len(proxy.batch_sizes) >= 2), proxy.batch_sizes
        assert proxy.batch_sizes[:2] == [2, 6]
        assert memory.flush(10)

    assert (memory.stored, memory.capture_failures) == (12, 0)
    assert [text for role, text in server.said(agent) if role == "user"] == [
        f"Question {n}." for n in range(6)
    ]


@pytest.mark.parametrize("status", [422, 413, 400])
def test_an_exchange_the_server_refuses_among_held_ones_loses_only_itself(
    status: int, server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with timed_capture(server, agent, oai, "Before.") as (proxy, memory):
        proxy.refuse_text = "Refused."
        proxy.refuse_status = status
        for text in ("Kept.", "Refused.", "Also kept."):
            oai.chat.completions.create(model="m", messages=ask(text))
        assert memory.pending == 6
        assert memory.flush(10)

    # Refused together, then sent one exchange at a time: only the refused one is lost,
    # counted and told.
    assert proxy.seen.count(BATCH) == 1 + 1 + 3
    assert (memory.stored, memory.capture_failures) == (6, 2)
    assert str(status) in memory.errors[-1]
    assert [text for role, text in server.said(agent) if role == "user"] == [
        "Before.",
        "Kept.",
        "Also kept.",
    ]


@pytest.mark.parametrize("status", [500, 503, 429, 401])
def test_held_exchanges_refused_together_for_what_none_caused_are_all_counted_not_resent(
    status: int, server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    """A failing server, one asking for fewer requests, or a missing key would refuse each
    exchange alike: sending them one by one would only add requests."""
    with timed_capture(server, agent, oai, "Before.") as (proxy, memory):
        proxy.refuse_text = "Refused."
        proxy.refuse_status = status
        for text in ("Lost.", "Refused.", "Also lost."):
            oai.chat.completions.create(model="m", messages=ask(text))
        assert memory.pending == 6
        assert memory.flush(10)

    assert proxy.batch_sizes == [2, 6]
    assert (memory.stored, memory.capture_failures) == (2, 6)
    assert all(f"{status} refused" in error for error in memory.errors)
    assert [text for role, text in server.said(agent) if role == "user"] == ["Before."]


def test_on_a_server_without_batches_an_exchanges_capture_is_timed_as_its_two_requests(
    server: MemoryServer, agent: str
) -> None:
    """The gap a capture needs is that of the whole exchange (a POST /messages a message),
    not of its last request."""
    with recording_proxy(server.url, batches=False) as proxy:
        proxy.message_delay = 0.2
        client = Client(proxy.url, api_key=None, timeout=10)
        client.ensure_agent(agent)
        recorder = capture.Recorder(agent)
        worker = capture.CaptureWorker(client, agent, recorder)
        try:
            worker.submit(capture.Exchange((capture.Note("user", "Hi.", {}),) * 2))
            assert worker.flush(10)
        finally:
            worker.close(10)
            client.close()

    assert proxy.seen.count("POST /messages") == 2
    assert recorder.counts.stored == 2
    assert worker._capture_seconds >= 2 * 0.2
