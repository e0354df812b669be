"""Every MCP tool called through the SDK's client against a real server process in local
mode: the replies of seed 000's and seed 003's tools are the strings a turn's agent reads;
seed 004's context, search and add answer with the subject's memory, scores and run id."""

import re

import httpx2
import pytest

from tests.mcp.conftest import mcp_client, refusal, reply, structured

DAY = r"\d{4}-\d{2}-\d{2}"
NATIVE = {
    "core_memory_read",
    "core_memory_append",
    "core_memory_replace",
    "core_memory_delete",
    "core_memory_list_blocks",
    "archival_memory_insert",
    "archival_memory_search",
    "store_memory",
    "search_memories",
    "list_memories",
}
OURS = {"memory_context", "memory_search", "memory_add", "list_agents"}


def new_agent(root: str, name: str, **fields: str) -> str:
    made = httpx2.post(f"{root}/agents", json={"name": name, **fields}, timeout=30)
    assert made.status_code == 201, made.text
    agent_id: str = made.json()["id"]
    return agent_id


async def test_lists_every_tool_with_what_it_acts_on(local_server: str) -> None:
    async with mcp_client(local_server) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == NATIVE | OURS
    for name in NATIVE:
        tool = listed[name]
        assert "agent" in tool.input_schema["required"], name
        assert "Acts on the agent named by `agent`" in (tool.description or "")
    # Each says which agents have it.
    assert "must have the krishna-memgpt architecture" in (
        listed["core_memory_read"].description or ""
    )
    assert "must have the categorized-memory architecture" in (
        listed["store_memory"].description or ""
    )
    assert set(listed["core_memory_replace"].input_schema["required"]) == {
        "agent",
        "block",
        "line_number",
        "new_content",
    }
    assert listed["store_memory"].input_schema["properties"]["category"]["enum"] == [
        "fact",
        "pattern",
        "preference",
        "capability",
    ]
    for name in ("memory_context", "memory_add"):
        assert "user_id" in listed[name].input_schema["required"], name
    assert listed["core_memory_read"].annotations is not None
    assert listed["core_memory_read"].annotations.read_only_hint is True
    assert listed["core_memory_delete"].annotations is not None
    assert listed["core_memory_delete"].annotations.destructive_hint is True


async def test_core_memory_tools_reply_as_seed_000_shows(local_server: str) -> None:
    new_agent(local_server, "Core Helper")
    agent = {"agent": "Core Helper"}  # by name; an id works too (below)
    async with mcp_client(local_server) as client:

        async def call(name: str, **arguments: object) -> str:
            return reply(await client.call_tool(name, {**agent, **arguments}))

        assert await call("core_memory_list_blocks") == (
            "Core Memory Blocks (2):\n"
            "[human] Facts about the user (0 lines, 0/5000 words, 0%)\n"
            "[persona] Your traits and characteristics (0 lines, 0/5000 words, 0%)"
        )
        assert await call("core_memory_append", block="human", content="Name: Ada") == (
            'Appended to [human] at line 1: "Name: Ada" (2/5000 words)'
        )
        assert await call("core_memory_append", block="human", content="Lives in: London") == (
            'Appended to [human] at line 2: "Lives in: London" (5/5000 words)'
        )
        assert await call("core_memory_append", block="human", content="Name: Ada") == (
            'Line already exists in [human] at line 1: "Name: Ada" (no change)'
        )
        replaced = await call(
            "core_memory_replace", block="human", line_number=2, new_content="Lives in: Paris"
        )
        assert replaced == (
            'Replaced line 2 in [human]: "Lives in: London" -> "Lives in: Paris" (5/5000 words)'
        )
        assert await call("core_memory_read", block="human") == (
            "[human] Core Memory (2 lines, 5/5000 words):\n1: Name: Ada\n2: Lives in: Paris"
        )
        assert await call("core_memory_delete", block="human", line_number=2) == (
            'Deleted line 2 from [human]: "Lives in: Paris" (lines below moved up; 1 line, '
            "2/5000 words)"
        )
        # A refusal of the memory service is a reply the model acts on, as in a turn.
        assert await call("core_memory_read", block="projects") == (
            "Block [projects] does not exist. Available blocks: human, persona."
        )
        assert await call("core_memory_delete", block="human", line_number=7) == (
            "Line 7 does not exist in [human] (1 line; use 1-1)."
        )


async def test_archival_memory_tools_reply_as_seed_000_shows(local_server: str) -> None:
    agent_id = new_agent(local_server, "Archivist")
    fact = "Ada drinks three cups of coffee daily. She prefers dark roast."
    async with mcp_client(local_server) as client:
        inserted = reply(
            await client.call_tool("archival_memory_insert", {"agent": agent_id, "content": fact})
        )
        again = reply(
            await client.call_tool("archival_memory_insert", {"agent": agent_id, "content": fact})
        )
        # The same text in other case and spacing is the same memory.
        respaced = "  ADA drinks three  cups of coffee daily.\nShe prefers DARK roast. "
        again_otherwise = reply(
            await client.call_tool(
                "archival_memory_insert", {"agent": agent_id, "content": respaced}
            )
        )
        found = reply(
            await client.call_tool("archival_memory_search", {"agent": agent_id, "query": "coffee"})
        )
        past = reply(
            await client.call_tool(
                "archival_memory_search", {"agent": agent_id, "query": "coffee", "page": 3}
            )
        )
    preview = '"Ada drinks three cups of coffee daily..."'
    assert re.fullmatch(rf"Inserted into archival memory \({DAY}\): {preview}", inserted)
    assert re.fullmatch(rf"Already in archival memory \({DAY}\): {preview} \(no change\)", again)
    assert again_otherwise == again
    assert re.fullmatch(
        rf'Archival Memory Search for "coffee" \(Page 1 of 1, 1 total\):\n\n'
        rf"\[1\] \({DAY}\) Ada drinks three cups of coffee daily\.\.\.",
        found,
    )
    assert past == 'Archival Memory Search for "coffee": page 3 does not exist (1 page, 1 total).'


async def test_categorized_memory_tools_reply_as_seed_003_shows(local_server: str) -> None:
    new_agent(local_server, "Sorter", architecture="categorized-memory")
    agent = {"agent": "Sorter"}
    async with mcp_client(local_server) as client:

        async def call(name: str, **arguments: object) -> str:
            return reply(await client.call_tool(name, {**agent, **arguments}))

        stored = await call(
            "store_memory",
            category="preference",
            content="Prefers tea in the afternoon",
            context="said on Monday",
            confidence=0.8,
        )
        assert stored == "Stored preference memory: Prefers tea in the afternoon"
        assert await call("search_memories", query="tea") == (
            "Found 1 memory for 'tea':\n- [preference] Prefers tea in the afternoon\n"
            "  Context: said on Monday\n  Confidence: 0.8"
        )
        assert await call("list_memories", category="preference") == (
            "My preference memories (1 total):\n- Prefers tea in the afternoon\n"
            "  Context: said on Monday\n  Confidence: 0.8"
        )


async def test_seed_004_add_context_and_search(local_server: str) -> None:
    made = httpx2.post(
        f"{local_server}/memory/initialize",
        json={"user_id": "customer_1", "user_info": "Name: Ada"},
        timeout=30,
    )
    assert made.status_code == 200, made.text
    said = [{"role": "user", "content": "I moved to Berlin last week"}]
    async with mcp_client(local_server) as client:
        added = structured(
            await client.call_tool(
                "memory_add",
                {"user_id": "customer_1", "messages": said, "wait_for_completion": True},
            )
        )
        context = structured(
            await client.call_tool(
                "memory_context", {"user_id": "customer_1", "query": "Berlin", "token_budget": 500}
            )
        )
        tight = structured(
            await client.call_tool(
                "memory_context", {"user_id": "customer_1", "query": "Berlin", "token_budget": 20}
            )
        )
        found = structured(
            await client.call_tool("memory_search", {"user_id": "customer_1", "query": "Berlin"})
        )
        by_agent = structured(
            await client.call_tool(
                "memory_search", {"agent": "Memory: customer_1", "query": "Berlin"}
            )
        )
        agents = structured(await client.call_tool("list_agents", {}))
    assert added["run_id"].startswith(f"run_{made.json()['agent_id']}_")
    assert added["status"] == "completed"
    assert added["messages_count"] == 1
    # The run is the one REST follows.
    run = httpx2.get(f"{local_server}/memory/runs/{added['run_id']}", timeout=30)
    assert run.status_code == 200, run.text
    assert run.json()["status"] == "completed"

    # The offline model's memory run noted the move (issue 29: "I moved to ..." is a home).
    assert context["context"].startswith(
        '<human description="Information about the human user.">Name: Ada\nLives in: Berlin</human>'
    )
    assert "<relevant_memories>\n1. User: I moved to Berlin last week\n" in context["context"]
    assert not context["truncated"]
    assert context["pending_runs"] == 0
    assert [m["content"] for m in context["memories"]] == ["I moved to Berlin last week"]
    assert tight["truncated"]
    assert tight["estimated_tokens"] <= 20

    assert found["mode"] == "hybrid"
    assert found["total"] == 1
    (memory,) = found["memories"]
    assert memory["content"] == "I moved to Berlin last week"
    assert memory["role"] == "user"
    assert memory["score"] > 0
    assert memory["similarity"] is not None
    assert memory["similarity"] > 0
    assert by_agent["memories"] == found["memories"]
    assert "Memory: customer_1" in {a["name"] for a in agents["agents"]}


async def test_an_agent_is_used_with_the_tools_of_its_architecture(local_server: str) -> None:
    """The tools an agent has in its own turns, no others: a categorized agent's memory is
    its categorized memories, which the core-memory tools would never show."""
    new_agent(local_server, "Filer", architecture="categorized-memory")
    new_agent(local_server, "Noter")
    async with mcp_client(local_server) as client:
        core = refusal(
            await client.call_tool(
                "core_memory_append", {"agent": "Filer", "block": "human", "content": "x"}
            )
        )
        stored = refusal(
            await client.call_tool(
                "store_memory", {"agent": "Noter", "category": "fact", "content": "planted"}
            )
        )
        blocks = reply(
            await client.call_tool("core_memory_read", {"agent": "Noter", "block": "human"})
        )
        found = structured(
            await client.call_tool("memory_search", {"agent": "Noter", "query": "planted"})
        )
        # The tools of seed 004 and list_agents are not an architecture's: any agent.
        listed = structured(
            await client.call_tool("memory_search", {"agent": "Filer", "query": "x"})
        )
    assert core == (
        "Error executing tool core_memory_append: tool_not_offered: Agent 'Filer' has the "
        "categorized-memory architecture, which does not offer core_memory_append; its tools "
        "are store_memory, search_memories, list_memories."
    )
    assert stored.startswith(
        "Error executing tool store_memory: tool_not_offered: Agent 'Noter' has the "
        "krishna-memgpt architecture, which does not offer store_memory; its tools are "
        "core_memory_"
    )
    assert blocks == "[human] Core Memory (0 lines, 0/5000 words):\n(empty)"  # nothing written
    assert found["total"] == 0
    assert listed["total"] == 0


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        (
            "core_memory_read",
            {"agent": "nobody", "block": "human"},
            "agent_not_found: No agent with that id or name.",
        ),
        (
            "memory_context",
            {"user_id": "stranger"},
            "subject_not_found",
        ),
        ("memory_search", {"query": "x"}, "Name exactly one of `agent` and `user_id`."),
        (
            "memory_search",
            {"query": "x", "agent": "a", "user_id": "b"},
            "Name exactly one of `agent` and `user_id`.",
        ),
        (
            "memory_add",
            {"user_id": "stranger", "messages": [{"role": "user", "content": "hi"}]},
            "subject_not_found",
        ),
        ("core_memory_delete", {"agent": "x", "block": "human", "line_number": 0}, "line_number"),
        ("store_memory", {"agent": "x", "category": "gossip", "content": "x"}, "category"),
    ],
)
async def test_a_bad_call_is_a_tool_error_that_says_why(
    local_server: str, tool: str, arguments: dict[str, object], message: str
) -> None:
    async with mcp_client(local_server) as client:
        refused = refusal(await client.call_tool(tool, arguments))
    assert refused.startswith(f"Error executing tool {tool}: ")
    assert message in refused


def test_local_mode_needs_no_token_and_keeps_to_its_own_names(local_server: str) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    served = httpx2.post(f"{local_server}/mcp", json=body, headers=accept)
    assert served.status_code == 200, served.text
    # Local mode's own guard answers first (as for every route), then the SDK's.
    rebound = httpx2.post(f"{local_server}/mcp", json=body, headers={**accept, "Host": "evil.com"})
    assert rebound.status_code == 403
    assert rebound.json()["code"] == "host_rejected"
    page = httpx2.post(
        f"{local_server}/mcp", json=body, headers={**accept, "Origin": "https://evil.com"}
    )
    assert page.status_code == 403
    assert page.json()["code"] == "origin_rejected"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_mcp_takes_post_only(local_server: str, method: str) -> None:
    # Stateless: no stream to open, no session to end (MCP allows a 405 for both).
    answered = httpx2.request(
        method, f"{local_server}/mcp", headers={"Accept": "text/event-stream"}, timeout=30
    )
    assert answered.status_code == 405
    assert answered.headers["allow"] == "POST"
    assert answered.json()["code"] == "method_not_allowed"


def test_a_body_that_is_not_json_rpc_is_a_parse_error(local_server: str) -> None:
    answered = httpx2.post(
        f"{local_server}/mcp",
        content=b"{not json",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        timeout=30,
    )
    assert answered.status_code == 400
    assert answered.json()["error"]["code"] == -32700  # JSON-RPC's parse error
