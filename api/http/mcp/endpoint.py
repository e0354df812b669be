"""What the app routes /mcp to. Importing the MCP SDK takes about two seconds, which a cold
start cannot spend (/health must answer first), so the SDK's server is built on the first
MCP request, imported and assembled on a worker thread so the event loop keeps serving.
Its session manager then runs in a task of its own until the app's lifespan ends
(`aclose`)."""

import asyncio
import contextvars
import importlib
from typing import Protocol

from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from api.config import Settings
from api.http.mcp import auth


class Served(Protocol):
    """The SDK's side, as `api.http.mcp.server.build` assembles it."""

    async def refusal(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Whether the transport guard refused the request (and answered it)."""
        ...

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None: ...

    async def run(self, started: asyncio.Event, stop: asyncio.Event) -> None:
        """The session manager, from `started` until `stop`."""
        ...


class McpEndpoint:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._starting: asyncio.Task[Served] | None = None
        self._stop = asyncio.Event()
        self._running: asyncio.Task[None] | None = None

    def route(self) -> Route:
        """/mcp takes POST only: stateless, it has no stream to open (GET) and no session
        to end (DELETE), which MCP lets a server answer with 405."""
        return Route("/mcp", self, methods=["POST"], include_in_schema=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        served = await self._served()
        # The guard first: a page on a rebinding host learns nothing, not even a 401.
        if await served.refusal(scope, receive, send):
            return
        if await auth.authenticate(scope, receive, send) is None:
            return
        await served.handle(scope, receive, send)

    async def _served(self) -> Served:
        if self._starting is None:
            # A context of its own: the sessions outlive the request that started them,
            # and must not log under its request id.
            self._starting = asyncio.create_task(self._start(), context=contextvars.Context())
        # Shielded: a client leaving during the start does not stop it for the others.
        return await asyncio.shield(self._starting)

    async def _start(self) -> Served:
        try:
            served = await self._build()
            started = asyncio.Event()
            self._running = running = asyncio.create_task(served.run(started, self._stop))
            waiting = asyncio.create_task(started.wait())
            await asyncio.wait([waiting, running], return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            if running.done():
                running.result()  # it ended before it started: raise why
            return served
        except BaseException:
            self._starting = None  # the next request tries again
            raise

    async def _build(self) -> Served:
        # Importing and assembling (the tools' schemas) are seconds of CPU, done once.
        return await asyncio.to_thread(_assemble, self._settings)

    async def aclose(self) -> None:
        """Ends the session manager (and every MCP request still open) with the app."""
        self._stop.set()
        if self._starting is not None:
            await asyncio.gather(self._starting, return_exceptions=True)
        if self._running is not None:
            await asyncio.gather(self._running, return_exceptions=True)
        # As new: an app whose lifespan runs again (a test's second client) starts anew.
        self._starting, self._running, self._stop = None, None, asyncio.Event()


def _assemble(settings: Settings) -> Served:
    module = importlib.import_module("api.http.mcp.server")
    built: Served = module.build(settings)
    return built
