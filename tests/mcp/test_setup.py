"""What /mcp is assembled from: the Host and Origin allowlist read from the settings, an
app that does not import the MCP SDK until the first MCP request (a cold start must not
pay for it), and a start that failed being tried again."""

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from starlette.types import Message, Receive, Scope, Send

from api.config import Settings
from api.http.mcp.allowlist import allowlist
from api.http.mcp.endpoint import McpEndpoint, Served


def test_the_allowlist_holds_our_names_and_the_public_hosts() -> None:
    allowed = allowlist(
        Settings(
            allowed_hosts="localhost,::1",
            mcp_public_hosts="Memory.Example.com, other.example",
            public_url="https://api.example.net",
            frontend_url="https://app.example.net",
        )
    )
    for host in ("localhost", "[::1]", "memory.example.com", "other.example", "api.example.net"):
        assert host in allowed.hosts
        assert f"{host}:*" in allowed.hosts
    assert "127.0.0.1" not in allowed.hosts  # only what ALLOWED_HOSTS names
    assert "https://app.example.net" in allowed.origins  # the frontend's
    assert {"http://localhost:*", "http://[::1]:*", "https://memory.example.com"} <= set(
        allowed.origins
    )
    assert "http://memory.example.com" not in allowed.origins  # public hosts: https only


def test_building_the_app_does_not_import_the_sdk(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from fastapi.testclient import TestClient
        from api.config import Settings
        from api.main import create_app

        app = create_app(Settings(sqlite_path={str(tmp_path / "cold.db")!r},
                                  memory_embedding_backend="none"))
        with TestClient(app, base_url="http://localhost") as client:
            assert client.get("/health").status_code == 200
            assert client.get("/.well-known/oauth-protected-resource/mcp").status_code == 200
            print("before", "mcp" in sys.modules)
            listed = client.post(
                "/mcp",
                json={{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}},
                headers={{"Accept": "application/json, text/event-stream",
                          "MCP-Protocol-Version": "2025-06-18"}},
            )
            tools = listed.json()["result"]["tools"]
            print("after", "mcp" in sys.modules, listed.status_code, len(tools))
            # The SDK's logging set-up (a Rich handler we would throw away) is skipped.
            print("rich", "rich" in sys.modules)
        """
    )
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split("\n")[:3] == ["before False", "after True 200 14", "rich False"]


class FailingServer:
    """A Served whose session manager fails as it starts, as a broken install would."""

    async def refusal(self, scope: Scope, receive: Receive, send: Send) -> bool:
        return False

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError("never reached: the server did not start")

    async def run(self, started: asyncio.Event, stop: asyncio.Event) -> None:
        raise RuntimeError("the session manager could not start")


class Endpoint(McpEndpoint):
    def __init__(self) -> None:
        super().__init__(Settings())
        self.builds = 0

    async def _build(self) -> Served:
        self.builds += 1
        return FailingServer()


async def test_a_server_that_fails_to_start_fails_the_request_and_is_tried_again() -> None:
    endpoint = Endpoint()
    scope: Scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": []}

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        raise AssertionError("nothing is answered by the endpoint itself")

    for _ in range(2):
        with pytest.raises(RuntimeError, match="could not start"):
            await endpoint(scope, receive, send)
    assert endpoint.builds == 2  # not stuck on the first failure
    await endpoint.aclose()
