"""/mcp in google mode, against a real server process: bearer tokens are our API keys and
access tokens; each user's tools reach only their own agents and subjects; a missing or
bad token is a 401 naming the protected-resource metadata, which is served there; hosts
and origins outside the allowlist are refused by the SDK's guard."""

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient
from mcp.shared.exceptions import MCPError

from api.main import create_app
from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable
from tests.auth.conftest import bearer
from tests.fakes.oidc import start_fake_google
from tests.mcp.conftest import (
    PUBLIC_HOST,
    Saas,
    google_settings,
    mcp_client,
    refusal,
    reply,
    structured,
)
from tests.parallel import free_port

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def initialize(root: str, headers: dict[str, str]) -> httpx2.Response:
    """An MCP initialize request as it is on the wire."""
    return httpx2.post(f"{root}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers})


async def cannot_connect(root: str, token: str | None) -> None:
    """The SDK's client, refused: it reports the error answer (not its status) and never
    lists a tool."""
    with pytest.raises(BaseExceptionGroup) as raised:
        async with mcp_client(root, token) as client:
            await client.list_tools()
    assert raised.group_contains(MCPError, match="Server returned an error response", depth=None)


def rest(saas: Saas, key: str, method: str, path: str, body: Any = None) -> Any:
    answered = httpx2.request(
        method, f"{saas.root}{path}", json=body, headers=bearer(key), timeout=30
    )
    assert answered.status_code in (200, 201), answered.text
    return answered.json()


async def test_each_user_reaches_only_their_own_agents(saas: Saas) -> None:
    ada, bob = saas.ada, saas.bob
    helper = rest(saas, ada.api_key, "POST", "/agents", {"name": "Helper"})["id"]
    subject = rest(saas, ada.api_key, "POST", "/memory/initialize", {"user_id": "customer_1"})[
        "agent_id"
    ]
    async with mcp_client(saas.root, ada.api_key) as client:
        reply(
            await client.call_tool(
                "archival_memory_insert", {"agent": helper, "content": "Ada's secret plan"}
            )
        )
    # Ada's access token (a signed-in session) is as good as her API key.
    async with mcp_client(saas.root, ada.access_token) as client:
        mine = structured(await client.call_tool("list_agents", {}))
    assert {a["id"] for a in mine["agents"]} == {helper, subject}

    theirs = {"agent": helper}
    async with mcp_client(saas.root, bob.api_key) as client:
        listed = structured(await client.call_tool("list_agents", {}))
        calls: list[tuple[str, dict[str, Any]]] = [
            ("core_memory_read", {**theirs, "block": "human"}),
            ("core_memory_append", {**theirs, "block": "human", "content": "planted"}),
            ("archival_memory_search", {**theirs, "query": "secret"}),
            ("archival_memory_insert", {**theirs, "content": "planted"}),
            ("search_memories", {**theirs, "query": "secret"}),
            ("memory_search", {**theirs, "query": "secret"}),
            ("core_memory_list_blocks", {"agent": "Helper"}),  # her agent's name, too
        ]
        agent_refusals = [refusal(await client.call_tool(name, args)) for name, args in calls]
        subject_calls: list[tuple[str, dict[str, Any]]] = [
            ("memory_context", {"user_id": "customer_1", "query": "secret"}),
            ("memory_search", {"user_id": "customer_1", "query": "secret"}),
            (
                "memory_add",
                {"user_id": "customer_1", "messages": [{"role": "user", "content": "planted"}]},
            ),
        ]
        subject_refusals = [
            refusal(await client.call_tool(name, args)) for name, args in subject_calls
        ]
    assert listed == {"agents": []}
    for refused in agent_refusals:
        assert "agent_not_found: No agent with that id or name." in refused
    for refused in subject_refusals:
        assert "subject_not_found" in refused
    # Nothing Bob tried landed in Ada's memory.
    async with mcp_client(saas.root, ada.api_key) as client:
        human = reply(await client.call_tool("core_memory_read", {**theirs, "block": "human"}))
        found = structured(
            await client.call_tool("memory_search", {"agent": helper, "query": "planted"})
        )
        context = structured(await client.call_tool("memory_context", {"user_id": "customer_1"}))
    assert human == "[human] Core Memory (0 lines, 0/5000 words):\n(empty)"
    assert found["total"] == 0
    assert "planted" not in context["context"]


async def test_a_missing_token_is_a_401_naming_the_resource_metadata(saas: Saas) -> None:
    refused = initialize(saas.root, {})
    assert refused.status_code == 401
    assert refused.json()["code"] == "not_authenticated"
    metadata_url = f"{saas.root}/.well-known/oauth-protected-resource/mcp"
    assert refused.headers["WWW-Authenticate"] == f'Bearer resource_metadata="{metadata_url}"'

    metadata = httpx2.get(metadata_url)
    assert metadata.status_code == 200
    assert metadata.json() == {
        "resource": f"{saas.root}/mcp",
        # No OAuth server issues our tokens: none is named (docs/mcp.md).
        "bearer_methods_supported": ["header"],
        "resource_name": "Agent memory",
        "resource_documentation": f"{saas.root}/docs",
    }
    # The SDK's client meets the same 401 and cannot connect.
    await cannot_connect(saas.root, None)


@pytest.mark.parametrize(
    ("token", "code"),
    [
        ("amk_not-a-key-of-anyone", "invalid_api_key"),
        ("eyJhbGciOiJIUzI1NiJ9.e30.forged", "invalid_token"),
    ],
)
async def test_a_bad_token_is_a_401_saying_why(saas: Saas, token: str, code: str) -> None:
    refused = initialize(saas.root, bearer(token))
    assert refused.status_code == 401
    assert refused.json()["code"] == code
    challenge = refused.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer error="invalid_token", error_description="')
    assert challenge.endswith(
        f'resource_metadata="{saas.root}/.well-known/oauth-protected-resource/mcp"'
    )
    await cannot_connect(saas.root, token)


def test_an_unknown_host_is_421_from_the_sdk_guard(saas: Saas) -> None:
    key = bearer(saas.ada.api_key)
    assert initialize(saas.root, {**key, "Host": "evil.example"}).status_code == 421
    # Before authentication: a rebinding page learns nothing, not even that it needs a token.
    assert initialize(saas.root, {"Host": "evil.example"}).status_code == 421
    # MCP_PUBLIC_HOSTS names the public host, with or without a port.
    for host in (PUBLIC_HOST, f"{PUBLIC_HOST}:443"):
        answered = initialize(saas.root, {**key, "Host": host})
        assert answered.status_code == 200, answered.text
        assert answered.json()["result"]["serverInfo"]["name"] == "agent-memory"


def test_a_foreign_origin_is_refused_and_a_listed_one_served(saas: Saas) -> None:
    key = bearer(saas.ada.api_key)
    assert initialize(saas.root, {**key, "Origin": "https://evil.example"}).status_code == 403
    for origin in (f"https://{PUBLIC_HOST}", "http://localhost:5173"):
        assert initialize(saas.root, {**key, "Origin": origin}).status_code == 200, origin


def test_a_store_that_fails_during_authentication_is_a_503_without_a_challenge(
    tmp_path: Path,
) -> None:
    """The API key cannot be looked up (DynamoDB unreachable): 503 with our error body, as
    REST answers, and no WWW-Authenticate: the credentials were never judged."""
    table = DynamoTable(
        "t", load_definition(), endpoint_url=f"http://127.0.0.1:{free_port()}", max_attempts=1
    )
    with start_fake_google() as google:
        settings = google_settings(tmp_path / "unused.db", google).model_copy(
            update={"create_table": False}
        )
        app = create_app(settings, table=table)
        with TestClient(app, base_url="http://localhost") as client:
            answered = client.post(
                "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **bearer("amk_some-key")}
            )
    assert answered.status_code == 503
    body = answered.json()
    assert body["code"] == "store_unavailable"
    assert body["message"] == "The service is temporarily unavailable; try again shortly."
    assert body["request_id"] == answered.headers["X-Request-ID"]
    assert "WWW-Authenticate" not in answered.headers
    assert "127.0.0.1" not in answered.text  # engine details stay in the logs
    asyncio.run(table.close())
