"""What /mcp is assembled from: the Host and Origin allowlist read from the settings, and
an app that does not import the MCP SDK until the first MCP request (a cold start must
not pay for it)."""

import subprocess
import sys
import textwrap
from pathlib import Path

from api.config import Settings
from api.mcp.allowlist import allowlist


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
            print("after", "mcp" in sys.modules, listed.status_code, len(listed.json()["result"]["tools"]))
        """
    )
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split("\n")[:2] == ["before False", "after True 200 14"]
