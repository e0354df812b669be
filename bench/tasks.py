"""Tasks and timers a streamed turn makes, per turn and per streamed event.

The app runs under uvicorn on uvloop in a thread, whose event loop counts every task
created (by the coroutine that runs in it) and every timer set; the fake OpenAI runs in
a process of its own. After a warm-up, N turns go one after another with 2 chunks, then
with 40; per event is the difference over the 38 events more.

    uv run python -m bench.tasks [--n 30]
"""

import argparse
import asyncio
import collections
import socket
import tempfile
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
import uvloop

from api.config import Settings
from api.main import create_app
from bench.harness import (
    ENCRYPTION_KEY,
    TIMEOUT,
    agent_on,
    conversation_of,
    fake_in_a_process,
    is_text_delta,
    time_to_first,
)


class Counted(uvloop.Loop):
    """A loop that counts the tasks it creates (by coroutine) and the timers it sets."""

    def __init__(self) -> None:
        super().__init__()
        self.tasks: collections.Counter[str] = collections.Counter()
        self.timers = 0
        self.set_task_factory(self._task)  # type: ignore[arg-type]

    def _task(
        self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kw: Any
    ) -> Any:
        self.tasks[getattr(coro, "__qualname__", type(coro).__name__)] += 1
        return asyncio.Task(coro, loop=loop, **kw)

    def call_later(self, delay: float, callback: Any, *args: Any, **kw: Any) -> Any:  # type: ignore[override]
        self.timers += 1
        return super().call_later(delay, callback, *args, **kw)

    def call_at(self, when: float, callback: Any, *args: Any, **kw: Any) -> Any:  # type: ignore[override]
        self.timers += 1
        return super().call_at(when, callback, *args, **kw)


@contextmanager
def serve_counted(settings: Settings) -> Iterator[tuple[str, Counted]]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        create_app(settings), lifespan="on", access_log=False, log_config=None, log_level="warning"
    )
    server = uvicorn.Server(config)
    loop = Counted()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.serve(sockets=[sock]))

    thread = threading.Thread(target=run, name="bench-app")
    thread.start()
    try:
        deadline = time.monotonic() + TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the app did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", loop
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def per_turn(chunks: int, n: int, warmup: int) -> tuple[collections.Counter[str], float]:
    """Tasks per turn by coroutine (times n), and timers per turn."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-tasks-") as tmp,
        fake_in_a_process(["--chunks", str(chunks), "--seconds", "0.2"]) as fake,
    ):
        settings = Settings(
            auth_mode="local",
            sqlite_path=Path(tmp) / "bench.db",
            encryption_key=ENCRYPTION_KEY,
            sse_coalesce_ms=0,  # one event per chunk, as the count wants
        )
        with (
            serve_counted(settings) as (root, loop),
            httpx2.Client(base_url=root, timeout=TIMEOUT) as client,
        ):
            agent_id = agent_on(client, fake)
            url = f"/conversations/{conversation_of(client, agent_id)}/messages"
            turn = {"content": "Tell me a story [stream]", "stream": True}
            for _ in range(warmup):
                time_to_first(client, url, turn, {}, is_text_delta)
            time.sleep(1.2)  # the warm-up's background work done
            tasks, timers = collections.Counter(loop.tasks), loop.timers
            for _ in range(n):
                time_to_first(client, url, turn, {}, is_text_delta)
            time.sleep(1.2)
            return loop.tasks - tasks, (loop.timers - timers) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    short, short_timers = per_turn(2, args.n, args.warmup)
    long, long_timers = per_turn(40, args.n, args.warmup)
    n = args.n
    print(f"{'tasks per turn, by coroutine':60} {'2 chunks':>9} {'40 chunks':>9}")
    for name in sorted(set(short) | set(long), key=lambda k: -long[k]):
        print(f"{name[:60]:60} {short[name] / n:9.2f} {long[name] / n:9.2f}")
    total_short, total_long = sum(short.values()) / n, sum(long.values()) / n
    print(f"{'all tasks':60} {total_short:9.2f} {total_long:9.2f}")
    print(f"{'timers set':60} {short_timers:9.2f} {long_timers:9.2f}")
    print(
        f"per streamed event: {(total_long - total_short) / 38:.3f} tasks, "
        f"{(long_timers - short_timers) / 38:.3f} timers"
    )


if __name__ == "__main__":
    main()
