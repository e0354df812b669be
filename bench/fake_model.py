"""The fake OpenAI of the tests (tests/fakes/llm_servers.py, the real wire format) as a
process of its own for the benchmarks; prints its base URL, then serves until killed.

    python -m bench.fake_model --chunks 40 --seconds 1 --stall 10

The reply depends on the tag the last user message ends with: `[stream]`, `--chunks` text
chunks over about `--seconds`; `[stall]`, one text chunk, then silence for `--stall`
seconds; anything else, the fake's own "ok" at once. Its first text chunk says how long
the model took to send it, `model=<seconds>` (from the request's arrival to that chunk
leaving the fake), so that a client can take the model's own time out of its time to the
first text: what is left is what the server in between added. One process serves every
kind, so that a server under test keeps one provider client (and its connections) warm."""

import argparse
import contextvars
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.fakes import llm_servers
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.fakes.serving import serve_in_thread

MARK = "MODEL_TIME_MARK"
MODEL_TIME_PREFIX = "model="
STREAM, STALL = "[stream]", "[stall]"

_asked: contextvars.ContextVar[str] = contextvars.ContextVar("asked", default="")


class ModelTime:
    """Notes which reply the request asks for, and writes the model's time into the first
    text chunk in place of MARK."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        arrived = time.perf_counter()
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        received: list[Message] = []
        body = b""
        while True:
            message = await receive()
            received.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        _asked.set(_tag(body))

        async def replayed() -> Message:
            return received.pop(0) if received else await receive()

        marked = False

        async def timed(message: Message) -> None:
            nonlocal marked
            if not marked and message["type"] == "http.response.body":
                chunk: bytes = message.get("body", b"")
                if MARK.encode() in chunk:
                    took = f"{MODEL_TIME_PREFIX}{time.perf_counter() - arrived:.6f}"
                    message = {**message, "body": chunk.replace(MARK.encode(), took.encode())}
                    marked = True
            await send(message)

        await self.app(scope, replayed, timed)


def _tag(body: bytes) -> str:
    try:
        last = json.loads(body)["messages"][-1]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return ""
    return next((tag for tag in (STREAM, STALL) if str(last).endswith(tag)), "")


def replies(chunks: int, seconds: float, stall: float) -> dict[str, Reply]:
    words = " ".join(f"w{i}" for i in range(1, chunks))
    return {
        STREAM: Reply(text=f"{MARK} {words}".strip(), chunk_delay_seconds=seconds / max(chunks, 1)),
        # The role chunk, the marked text, then silence until the stall ends the response.
        STALL: Reply(text=f"{MARK} waiting", stall_after_chunks=2),
        "": Reply(text=f"{MARK} ok"),
    }


@contextmanager
def start(chunks: int = 40, seconds: float = 1.0, stall: float = 10.0) -> Iterator[FakeLLM]:
    kinds = replies(chunks, seconds, stall)
    llm_servers.MAX_STALL_SECONDS = stall  # how long a stalled reply stays silent

    def build(root: str) -> tuple[FakeLLM, ASGIApp]:
        fake = FakeLLM(base_url=root + "/v1", models=list(llm_servers.DEFAULT_OPENAI_MODELS))
        # Each request takes its own copy of the reply it asked for.
        fake.next_reply = lambda: Reply(**vars(kinds[_asked.get()]))  # type: ignore[method-assign]
        # Kept small: a benchmark's fake sees thousands of requests.
        fake.requests = _Nothing()
        fake.request_headers = _Nothing()
        fake.request_times = _Nothing()
        return fake, ModelTime(llm_servers._openai_app(fake))

    with serve_in_thread(
        "fake-openai", build, "/v1/models", probe_headers={"authorization": "Bearer probe"}
    ) as fake:
        yield fake


class _Nothing(list):  # type: ignore[type-arg]
    """A list that keeps nothing appended to it."""

    def append(self, _: object) -> None:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--chunks", type=int, default=40, help="text chunks of [stream]")
    parser.add_argument("--seconds", type=float, default=1.0, help="over this long")
    parser.add_argument("--stall", type=float, default=10.0, help="silence of [stall]")
    args = parser.parse_args()
    with start(args.chunks, args.seconds, args.stall) as fake:
        print(fake.base_url, flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
