"""Facts that change, over MCP (the SDK's client against a real server): the memory-writing
tools take `supersedes` and say what they replaced, the search and context tools answer as
of now, as of a moment (`as_of`) or with the history (`include_history`), a replaced
memory labelled `(until YYYY-MM-DD)`; another tenant's memory id is unknown."""

from typing import Any

import httpx2

from tests.mcp.conftest import Saas, mcp_client, refusal, structured
from tests.mcp.test_auth import rest

QUESTION = "where do I live"


def initialize(root: str, user_id: str, headers: dict[str, str] | None = None) -> None:
    made = httpx2.post(
        f"{root}/memory/initialize", json={"user_id": user_id}, headers=headers, timeout=30
    )
    assert made.status_code == 200, made.text


def said(content: str, **fields: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, **fields}


async def test_memory_add_replaces_and_search_and_context_answer_then(local_server: str) -> None:
    initialize(local_server, "mover")
    subject = {"user_id": "mover"}
    async with mcp_client(local_server) as client:

        async def call(tool: str, **arguments: Any) -> dict[str, Any]:
            return structured(await client.call_tool(tool, {**subject, **arguments}))

        first = await call(
            "memory_add", messages=[said("I live in Lisbon", valid_from="2024-01-01")]
        )
        assert first["replaced"] == first["not_replaced"] == first["notes"] == []
        (lisbon,) = (await call("memory_search", query=QUESTION))["memories"]
        moved = await call(
            "memory_add",
            messages=[said("I live in Porto", valid_from="2025-06-01", supersedes=[lisbon["id"]])],
            wait_for_completion=True,
        )
        now = await call("memory_search", query=QUESTION)
        history = await call("memory_search", query=QUESTION, include_history=True)
        then = await call("memory_search", query=QUESTION, as_of="2024-12-31")
        context_now = await call("memory_context", query=QUESTION)
        context_then = await call("memory_context", query=QUESTION, as_of="2024-12-31")
        again = await call(
            "memory_add", messages=[said("I live in Braga", supersedes=[lisbon["id"]])]
        )
    assert moved["status"] == "completed"
    assert moved["notes"] == ["Replaced: 'I live in Lisbon' (2024-01-01) → 'I live in Porto'"]
    (replaced,) = moved["replaced"]
    assert replaced["id"] == lisbon["id"]
    assert replaced["superseded_at"] == "2025-06-01T00:00:00Z"  # a date: from its start
    porto = replaced["superseded_by"]

    assert now["results"] == ["I live in Porto"]
    assert [m["id"] for m in now["memories"]] == [porto]
    assert sorted(history["results"]) == ["I live in Lisbon (until 2025-06-01)", "I live in Porto"]
    past = next(m for m in history["memories"] if m["id"] == lisbon["id"])
    assert (past["superseded_by"], past["valid_from"]) == (porto, "2024-01-01T00:00:00Z")
    assert then["results"] == ["I live in Lisbon (until 2025-06-01)"]

    # The relevant memories (the blocks are as the memory runs left them, now).
    assert context_now["context"].endswith(
        "<relevant_memories>\n1. User: I live in Porto\n</relevant_memories>"
    )
    assert context_then["context"].endswith(
        "<relevant_memories>\n1. User: I live in Lisbon (until 2025-06-01)\n</relevant_memories>"
    )
    assert [m["id"] for m in context_then["memories"]] == [lisbon["id"]]

    # Replaced already: left as it is, and said.
    assert again["replaced"] == []
    assert [m["id"] for m in again["not_replaced"]] == [lisbon["id"]]
    assert again["notes"] == [
        f"Not replaced: 'I live in Lisbon' was already replaced by {porto} (until 2025-06-01)"
    ]


async def test_what_cannot_be_served_is_a_tool_error_that_says_why(local_server: str) -> None:
    initialize(local_server, "refused")
    subject = {"user_id": "refused"}
    unknown = "0" * 32
    async with mcp_client(local_server) as client:

        async def refused(tool: str, **arguments: Any) -> str:
            return refusal(await client.call_tool(tool, {**subject, **arguments}))

        not_found = await refused("memory_add", messages=[said("Hi", supersedes=[unknown])])
        without_archival = await refused(
            "memory_add", messages=[said("Hi", supersedes=[unknown])], store_in_archival=False
        )
        bad_moment = await refused("memory_search", query=QUESTION, as_of="soon")
        bad_context_moment = await refused("memory_context", query=QUESTION, as_of="2025-02-30")
        found = structured(
            await client.call_tool(
                "memory_search", {**subject, "query": "Hi", "include_history": True}
            )
        )
    assert not_found == (
        f"Error executing tool memory_add: archival_memory_not_found: Archival memory "
        f"{unknown} does not exist."
    )
    assert without_archival.startswith("Error executing tool memory_add: archival_required: ")
    assert "as_of" in bad_moment
    assert "as_of" in bad_context_moment
    assert found["total"] == 0  # nothing of the refused adds was stored


async def test_another_tenants_memory_is_unknown(saas: Saas) -> None:
    ada, bob = saas.ada, saas.bob
    for tenant in (ada, bob):
        rest(saas, tenant.api_key, "POST", "/memory/initialize", {"user_id": "tenant_subject"})
    subject = {"user_id": "tenant_subject"}
    async with mcp_client(saas.root, ada.api_key) as client:
        structured(
            await client.call_tool(
                "memory_add", {**subject, "messages": [said("Ada's customer lives in Lisbon")]}
            )
        )
        (memory,) = structured(
            await client.call_tool("memory_search", {**subject, "query": "Lisbon"})
        )["memories"]
    async with mcp_client(saas.root, bob.api_key) as client:
        refused = refusal(
            await client.call_tool(
                "memory_add",
                {**subject, "messages": [said("Porto", supersedes=[memory["id"]])]},
            )
        )
    assert "archival_memory_not_found" in refused
    async with mcp_client(saas.root, ada.api_key) as client:
        (same,) = structured(
            await client.call_tool("memory_search", {**subject, "query": "Lisbon"})
        )["memories"]
    assert same["superseded_by"] is None
