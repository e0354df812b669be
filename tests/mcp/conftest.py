"""A real server process (`agent-memory serve`) and the MCP SDK's own client talking to it
over streamable HTTP: in local mode, and in google mode with two users signed in through
the fake Google, each holding an API key and an access token."""

from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from api.config import Settings
from api.main import create_app
from tests.auth.conftest import JWT_SECRET, access_token, as_user, bearer, browser, sign_in
from tests.fakes import serving
from tests.fakes.oidc import FakeGoogle, start_fake_google

PUBLIC_HOST = "memory.example.com"  # MCP_PUBLIC_HOSTS of the google-mode server
ENCRYPTION_KEY = "e" * 40


@contextmanager
def server_process(env: Mapping[str, str]) -> Iterator[str]:
    """`agent-memory serve` on a free port with these settings; its root URL."""
    with serving.server_process({"ENCRYPTION_KEY": ENCRYPTION_KEY, **env}) as server:
        yield server.root


@asynccontextmanager
async def mcp_client(root: str, token: str | None = None) -> AsyncIterator[Client]:
    """The SDK's client on /mcp, sending `token` as its bearer token."""
    headers = bearer(token) if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{root}/mcp", http_client=http)) as client,
    ):
        yield client


def text(result: CallToolResult) -> str:
    """A tool's reply: its one text part."""
    assert len(result.content) == 1, result
    part = result.content[0]
    assert isinstance(part, TextContent)
    return part.text


def reply(result: CallToolResult) -> str:
    assert not result.is_error, result
    return text(result)


def refusal(result: CallToolResult) -> str:
    assert result.is_error, result
    return text(result)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result
    content: dict[str, Any] | None = result.structured_content
    assert content is not None, result
    return content


# --- local mode ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Local mode, the shipped embedding model (so search is hybrid)."""
    db = tmp_path_factory.mktemp("mcp-local") / "local.db"
    with server_process({"SQLITE_PATH": str(db)}) as root:
        yield root


# --- google mode -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Tenant:
    email: str
    api_key: str
    access_token: str


@dataclass(frozen=True)
class Saas:
    root: str
    ada: Tenant
    bob: Tenant


def google_settings(db: Path, google: FakeGoogle) -> Settings:
    return Settings(
        store="sqlite",
        sqlite_path=db,
        auth_mode="google",
        public_url="https://testserver",
        jwt_secret=JWT_SECRET,
        encryption_key=ENCRYPTION_KEY,
        google_client_id=google.client_id,
        google_client_secret=google.client_secret,
        google_discovery_url=google.discovery_url,
        frontend_url="http://localhost:5173",
        memory_embedding_backend="none",
    )


def signed_in(settings: Settings, google: FakeGoogle, sub: str, email: str) -> Tenant:
    """A user signed in through the fake Google (on an app over the same file as the
    server), with an API key and the access token of their session."""
    as_user(google, sub, email)
    with browser(create_app(settings)) as client:
        sign_in(client)
        token = access_token(client)
        made = client.post("/auth/api-keys", json={"name": "mcp"}, headers=bearer(token))
        assert made.status_code == 201, made.text
        return Tenant(email, made.json()["key"], token)


@pytest.fixture(scope="module")
def saas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Saas]:
    db = tmp_path_factory.mktemp("mcp-google") / "saas.db"
    with start_fake_google() as google:
        settings = google_settings(db, google)
        ada = signed_in(settings, google, "1111", "ada@example.com")
        bob = signed_in(settings, google, "2222", "bob@example.com")
        env = {
            "STORE": "sqlite",
            "SQLITE_PATH": str(db),
            "AUTH_MODE": "google",
            "PUBLIC_URL": "{root}",
            "JWT_SECRET": JWT_SECRET,
            "GOOGLE_CLIENT_ID": google.client_id,
            "GOOGLE_CLIENT_SECRET": google.client_secret,
            "GOOGLE_DISCOVERY_URL": google.discovery_url,
            "FRONTEND_URL": "http://localhost:5173",
            "MEMORY_EMBEDDING_BACKEND": "none",
            "MCP_PUBLIC_HOSTS": PUBLIC_HOST,
        }
        with server_process(env) as root:
            yield Saas(root, ada, bob)
