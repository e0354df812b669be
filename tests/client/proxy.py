"""A proxy on 127.0.0.1 in front of the memory server that records every request, can hold
POST /context unanswered (or refuse it), can make POST /messages/batch or /messages slow
(a capture that takes longer than the calls leave between two fetches) or refuse a batch
holding a given text (with a 422 unless told otherwise), and can play seed 002's own
server, which has no POST /messages/batch: its FastAPI app answers 405 there (the path
matches GET /messages/{agent_name})."""

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.serving import serve_in_thread

METHODS = ["GET", "POST", "PUT", "DELETE"]


@dataclass
class Proxy:
    url: str
    upstream: str
    batches: bool = True  # False: POST /messages/batch is refused as seed 002's server does
    batch_delay: float = 0.0  # seconds added to each POST /messages/batch
    message_delay: float = 0.0  # seconds added to each POST /messages
    refuse_text: str | None = None  # a batch holding it is refused with `refuse_status`
    refuse_status: int = 422
    refuse_context: int | None = None  # POST /context is answered with this status
    seen: list[str] = field(default_factory=list)  # "POST /messages", in order
    batch_sizes: list[int] = field(default_factory=list)  # messages in each batch, in order
    # While set, POST /context waits (unanswered) until it is cleared.
    hold_context: threading.Event = field(default_factory=threading.Event)
    _released: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        self.hold_context.clear()
        self._released.set()


@contextmanager
def recording_proxy(
    upstream: str, *, batches: bool = True, batch_delay: float = 0.0
) -> Iterator[Proxy]:
    def build(root: str) -> tuple[Proxy, Starlette]:
        proxy = Proxy(url=root, upstream=upstream, batches=batches, batch_delay=batch_delay)
        http = httpx2.AsyncClient(base_url=upstream, timeout=30)

        async def forward(request: Request) -> Response:
            path = request.url.path
            if path != "/health":
                proxy.seen.append(f"{request.method} {path}")
            if path.startswith("/context/") and proxy.hold_context.is_set():
                await asyncio.to_thread(proxy._released.wait, 30)
            if path.startswith("/context/") and proxy.refuse_context:
                detail = {"code": "unavailable", "message": "refused by the proxy"}
                return JSONResponse(detail, status_code=proxy.refuse_context)
            if path == "/messages/batch" and not proxy.batches:
                return JSONResponse({"detail": "Method Not Allowed"}, status_code=405)
            body = await request.body()
            if path == "/messages/batch":
                proxy.batch_sizes.append(len(json.loads(body)["messages"]))
            if path == "/messages/batch" and proxy.batch_delay:
                await asyncio.sleep(proxy.batch_delay)
            if path == "/messages" and proxy.message_delay:
                await asyncio.sleep(proxy.message_delay)
            refuse = proxy.refuse_text
            if path == "/messages/batch" and refuse and refuse.encode() in body:
                detail = {"code": "refused", "message": "refused by the proxy"}
                return JSONResponse(detail, status_code=proxy.refuse_status)
            answer = await http.request(
                request.method,
                path,
                params=request.url.query,
                content=body,
                headers={"content-type": request.headers.get("content-type", "")},
            )
            return Response(
                answer.content,
                status_code=answer.status_code,
                media_type=answer.headers.get("content-type"),
            )

        return proxy, Starlette(routes=[Route("/{path:path}", forward, methods=METHODS)])

    with serve_in_thread("memory-proxy", build, "/health") as proxy:
        yield proxy
