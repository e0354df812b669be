"""What the turn benchmarks share (bench/turn.py, bench/load.py): the app served by uvicorn
in a thread, Server-Sent Events read as they come, a turn timed to its first text, the fake
OpenAI of the tests in a process of its own, and the set-up of an agent pointed at it."""

import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from fastapi import FastAPI

from bench.common import printing_process

ROOT = Path(__file__).resolve().parent.parent
ENCRYPTION_KEY = "bench-" + "k" * 40
OPENAI_KEY = "sk-bench-0000000000000000000000000000"
TIMEOUT = 30.0

# Whether a Server-Sent Event (its name, its data) is the one the clock stops at.
EventMatch = Callable[[str, str], bool]


@contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """The app under uvicorn on a free port of 127.0.0.1, lifespan included; its root URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app,
        lifespan="on",
        access_log=False,
        log_config=None,
        log_level="warning",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="bench-app")
    thread.start()
    try:
        deadline = time.monotonic() + TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the app did not start; see the log above")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def sse_blocks(buffer: str) -> tuple[list[tuple[str, str]], str]:
    """The complete events at the start of `buffer` as (name, data), and what is left."""
    *blocks, rest = buffer.replace("\r\n", "\n").split("\n\n")
    found: list[tuple[str, str]] = []
    for block in blocks:
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            found.append((name, "\n".join(data)))
    return found, rest


def events(response: httpx2.Response) -> Iterator[tuple[str, str]]:
    """The (name, data) of each Server-Sent Event as soon as its block is complete."""
    buffer = ""
    for chunk in response.iter_text():
        found, buffer = sse_blocks(buffer + chunk)
        yield from found


def time_to_first(
    client: httpx2.Client,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    match: EventMatch,
) -> float:
    """Seconds from sending the request to the first event that matches; the rest of the
    stream is read to its end, so that the next request starts on a finished one."""
    start = time.perf_counter()
    first: float | None = None
    with client.stream("POST", url, json=body, headers=headers) as response:
        if response.status_code != 200:
            response.read()
            raise RuntimeError(f"{url} answered {response.status_code}: {response.text}")
        for name, data in events(response):
            if name in ("error", "run.failed"):
                raise RuntimeError(f"the turn failed: {data}")
            if first is None and match(name, data):
                first = time.perf_counter()
    if first is None:
        raise RuntimeError(f"{url} streamed no matching event")
    return first - start


def is_text_delta(name: str, data: str) -> bool:
    return name == "text.delta"


def created(response: httpx2.Response) -> str:
    if response.status_code not in (200, 201):
        raise RuntimeError(f"set-up failed: {response.status_code} {response.text}")
    found: str = response.json()["id"]
    return found


def use_fake(client: httpx2.Client, base_url: str) -> None:
    """The user's OpenAI settings pointed at a fake."""
    saved = client.put(
        "/settings/providers/openai", json={"api_key": OPENAI_KEY, "base_url": base_url}
    )
    if saved.status_code != 200:
        raise RuntimeError(f"set-up failed: {saved.status_code} {saved.text}")


def agent_on(client: httpx2.Client, base_url: str) -> str:
    """An agent on the OpenAI adapter, pointed at the fake at `base_url`; its id."""
    use_fake(client, base_url)
    agent = client.post(
        "/agents", json={"name": "Bench", "provider": "openai", "model": "gpt-4o-mini"}
    )
    return created(agent)


def conversation_of(client: httpx2.Client, agent_id: str) -> str:
    return created(client.post("/conversations", json={"agent_id": agent_id}))


@contextmanager
def fake_in_a_process(args: Sequence[str] = ()) -> Iterator[str]:
    """The fake OpenAI in a process of its own, as a real provider is (bench/fake_model.py,
    given `args`); its base URL."""
    command = [sys.executable, "-m", "bench.fake_model", *args]
    with printing_process(command, ROOT, "the fake OpenAI process") as base_url:
        yield base_url
