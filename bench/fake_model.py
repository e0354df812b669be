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
import asyncio
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


class ModelTime:
    """Streamed completions answered here, in the fake's own chunks (its `_openai_chunks`,
    the real wire format) but sent by a plain loop: the fake's Starlette response asks
    whether the client left after every chunk, which at 20,000 chunks a second made the
    fake, not the server under test, the bottleneck. The reply is the one the request's
    tag asks for; the model's time goes into the first text chunk in place of MARK; for
    `[stall]` what follows that chunk waits `stall_seconds`. Everything else (errors,
    listings, requests without a stream) goes to the fake itself."""

    def __init__(self, app: ASGIApp, kinds: dict[str, Reply], stall_seconds: float) -> None:
        self.app = app
        self.kinds = kinds
        self.stall_seconds = stall_seconds

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
        asked = _asked(body)
        if asked is None:

            async def replayed() -> Message:
                return received.pop(0) if received else await receive()

            await self.app(scope, replayed, send)
            return
        model, tag, usage = asked
        reply = self.kinds[tag]
        chunks = [
            f"data: {json.dumps(c, separators=(',', ':'))}\n\n".encode()
            for c in llm_servers._openai_chunks(reply, model, usage)
        ]
        chunks.append(b"data: [DONE]\n\n")
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        mark = MARK.encode()
        for chunk in chunks:
            marked = mark in chunk
            if marked:
                took = f"{MODEL_TIME_PREFIX}{time.perf_counter() - arrived:.6f}".encode()
                chunk = chunk.replace(mark, took)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if marked and tag == STALL:
                await asyncio.sleep(self.stall_seconds)
            elif reply.chunk_delay_seconds:
                await asyncio.sleep(reply.chunk_delay_seconds)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _asked(body: bytes) -> tuple[str, str, bool] | None:
    """A streamed completion's model, the tag of its last message and whether it asks for
    usage; None for any other request."""
    try:
        request = json.loads(body)
        last = str(request["messages"][-1]["content"])
        model = str(request["model"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    if request.get("stream") is not True:
        return None
    usage = (request.get("stream_options") or {}).get("include_usage") is True
    return model, next((tag for tag in (STREAM, STALL) if last.endswith(tag)), ""), usage


def replies(chunks: int, seconds: float) -> dict[str, Reply]:
    words = " ".join(f"w{i}" for i in range(1, chunks))
    return {
        STREAM: Reply(text=f"{MARK} {words}".strip(), chunk_delay_seconds=seconds / max(chunks, 1)),
        # The role chunk and the marked text, then silence (ModelTime), then the rest.
        STALL: Reply(text=f"{MARK} waiting"),
        "": Reply(text=f"{MARK} ok"),
    }


@contextmanager
def start(chunks: int = 40, seconds: float = 1.0, stall: float = 10.0) -> Iterator[FakeLLM]:
    kinds = replies(chunks, seconds)

    def build(root: str) -> tuple[FakeLLM, ASGIApp]:
        fake = FakeLLM(base_url=root + "/v1", models=list(llm_servers.DEFAULT_OPENAI_MODELS))
        # Kept small: a benchmark's fake sees thousands of requests.
        fake.requests = _Nothing()
        fake.request_headers = _Nothing()
        fake.request_times = _Nothing()
        return fake, ModelTime(llm_servers._openai_app(fake), kinds, stall)

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
