"""The SDK's side of /mcp, assembled: an `MCPServer` with our tools, its streamable HTTP
session manager (stateless, JSON answers: any replica or worker can take any request, as
with REST), and the SDK's transport guard with our Host and Origin allowlist. Imported
only by `endpoint`, on the first MCP request."""

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver import server as sdk_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from api import __version__
from api.config import Settings
from api.http.mcp import tools
from api.http.mcp.allowlist import allowlist

INSTRUCTIONS = """Long-term memory for your agents on this server.
Start with list_agents to learn the agents you may use; every memory tool names one with
`agent` (its id or name). Core memory (core_memory_*) holds short facts in blocks such as
`human` and `persona`; archival memory (archival_memory_*) holds any amount of detail,
found again by search. For a seed 004 subject (a person or customer you remember by
`user_id`), call memory_context before answering them and memory_add with the new turns
after."""


class Assembled:
    def __init__(self, settings: Settings) -> None:
        allowed = allowlist(settings)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=allowed.hosts,
            allowed_origins=allowed.origins,
        )
        with _sdk_logging_left_alone():
            self.server: MCPServer[Any] = MCPServer(
                "agent-memory",
                title="Agent memory",
                instructions=INSTRUCTIONS,
                version=__version__,
            )
        tools.register(self.server)
        # Builds the session manager; the Starlette app around it is not used: the app's
        # own route at /mcp calls the manager after the guard and our authentication.
        self.server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            transport_security=security,
            max_request_body_size=settings.max_request_bytes,
        )
        self.manager: StreamableHTTPSessionManager = self.server.session_manager
        self.guard = TransportSecurityMiddleware(security)

    async def refusal(self, scope: Scope, receive: Receive, send: Send) -> bool:
        refused = await self.guard.validate_request(Request(scope, receive))
        if refused is None:
            return False
        await refused(scope, receive, send)
        return True

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)

    async def run(self, started: asyncio.Event, stop: asyncio.Event) -> None:
        async with self.manager.run():
            started.set()
            await stop.wait()


_SDK_CONFIGURE = "configure_logging"  # what MCPServer's constructor calls, in its module


@contextmanager
def _sdk_logging_left_alone() -> Iterator[None]:
    """MCPServer's constructor configures logging: `logging.basicConfig` with a Rich handler
    on a root logger that has none. Logging is ours (api/observability/logs.py) or the
    host's, and importing Rich for a handler thrown away cost 42 modules and about 5 MiB;
    so its `configure_logging` does nothing while the server is built (tests/mcp/
    test_setup.py shows Rich is not imported), and the root logger is kept as it was
    whatever the SDK does."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure = getattr(sdk_server, _SDK_CONFIGURE, None)  # absent in another SDK: no matter
    if configure is not None:
        setattr(sdk_server, _SDK_CONFIGURE, lambda *args, **kwargs: None)
    try:
        yield
    finally:
        if configure is not None:
            setattr(sdk_server, _SDK_CONFIGURE, configure)
        root.handlers[:] = handlers
        root.setLevel(level)


def build(settings: Settings) -> Assembled:
    return Assembled(settings)
