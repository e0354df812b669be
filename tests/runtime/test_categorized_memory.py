"""Seed 003's architecture end to end: an agent on `categorized-memory` talking to the fake
OpenAI, whose model is scripted to call each of the three tools with good and bad
arguments. The model sees seed 003's prompt and tools and nothing else; every reply it gets
back is checked character for character; what it stored is read back over REST."""

import json
from typing import Any

from fastapi.testclient import TestClient

from api.kit.clock import FrozenClock
from api.runtime.architectures.categorized_memory import INSTRUCTIONS
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.memory.test_categorized_tools import SEED_TOOLS
from tests.runtime.conftest import OPENAI_KEY, lines_of, new_conversation, send

API_FACT = "API endpoint is https://api.example.com/v1"
API_PATTERN = "Users often ask about API authentication"
API_PREFERENCE = "User prefers detailed API examples"
SQL_CAPABILITY = "Can generate SQL queries for PostgreSQL"


def categorized_agent(client: TestClient, fake: FakeLLM, **fields: Any) -> str:
    saved = client.put(
        "/settings/providers/openai", json={"api_key": OPENAI_KEY, "base_url": fake.base_url}
    )
    assert saved.status_code == 200, saved.text
    created = client.post(
        "/agents",
        json={
            "name": "Sorter",
            "architecture": "categorized-memory",
            "provider": "openai",
            "model": "gpt-4o-mini",
            **fields,
        },
    )
    assert created.status_code == 201, created.text
    assert created.json()["architecture"] == "categorized-memory"
    agent_id: str = created.json()["id"]
    return agent_id


def tool(name: str, **arguments: Any) -> ToolCallScript:
    return ToolCallScript(name, json.dumps(arguments))


def results(found: list[Any]) -> list[str]:
    return [e.data["content"] for e in found if e.name == "tool.result"]


def test_the_three_tools_through_turns(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    agent_id = categorized_agent(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)

    # Turn 1: a preference, and arguments the model gets wrong and is told about.
    fake_openai.replies += [
        Reply(tool_calls=[tool("store_memory", category="preference", content=API_PREFERENCE)]),
        Reply(
            tool_calls=[
                tool("store_memory", category="invalid_category", content="Something"),
                tool("store_memory", category="fact", content="Port 80", confidence=1.5),
                tool("store_memory", category="fact", content="   "),
                tool("store_memory", content="No category"),
                ToolCallScript("store_memory", '{"category": "fact", "content": "cut o'),
            ]
        ),
        Reply(text="Noted."),
    ]
    found = send(client, conversation_id, "I like detailed API examples.")
    assert results(found) == [
        f"Stored preference memory: {API_PREFERENCE}",
        "Failed to store memory: Invalid category 'invalid_category'",
        "Failed to store memory: Confidence must be a number from 0.0 to 1.0, not 1.5.",
        "Failed to store memory: Content is empty; give the information to remember.",
        "Failed to store memory: 'category' is required (fact, pattern, preference or capability).",
        "Invalid arguments for store_memory: the arguments are not valid JSON. (no change)",
    ]
    assert [e.name for e in found][-2:] == ["message", "run.completed"]
    # What the model saw: seed 003's prompt and its three tools, verbatim, nothing else.
    first = fake_openai.requests[0]
    assert first["messages"][0] == {"role": "system", "content": INSTRUCTIONS}
    assert INSTRUCTIONS == (
        "You are a helpful assistant with memory capabilities. You can store and retrieve "
        "information using the available tools."
    )
    assert first["tools"] == SEED_TOOLS

    # Turn 2: a pattern with its context. Turn 3: a fact, the same fact again, a capability.
    clock.advance(60)
    fake_openai.replies += [
        Reply(
            tool_calls=[
                tool(
                    "store_memory",
                    category="pattern",
                    content=API_PATTERN,
                    context="User assistance patterns",
                )
            ]
        ),
        Reply(text="I see a pattern."),
    ]
    assert results(send(client, conversation_id, "How do I authenticate?")) == [
        f"Stored pattern memory: {API_PATTERN}"
    ]
    clock.advance(60)
    fake_openai.replies += [
        Reply(
            tool_calls=[
                tool(
                    "store_memory",
                    category="fact",
                    content=API_FACT,
                    context="API integration discussion",
                ),
                tool("store_memory", category="pattern", content=API_FACT),
                tool("store_memory", category="capability", content=SQL_CAPABILITY, confidence=0.7),
            ]
        ),
        Reply(text="Got it."),
    ]
    assert results(send(client, conversation_id, "The endpoint is api.example.com/v1.")) == [
        f"Stored fact memory: {API_FACT}",
        f"Already stored as fact memory: {API_FACT} (no change)",
        f"Stored capability memory: {SQL_CAPABILITY}",
    ]

    # Turn 4: the model searches and lists, with a few arguments out of bounds.
    clock.advance(60)
    fake_openai.replies += [
        Reply(
            tool_calls=[
                tool("search_memories", query="API"),
                tool("search_memories", query="API", limit=50),
                tool("search_memories", query="sailing"),
                tool("list_memories", category="fact"),
                tool("list_memories", category="capability", limit=5),
                tool("list_memories", category="opinion"),
                tool("list_memories", category="pattern", limit=0),
            ]
        ),
        Reply(text="Here is what I know about APIs."),
    ]
    found = send(client, conversation_id, "What do you know about APIs?")
    assert results(found) == [
        "Found 3 memories for 'API':\n"
        f"- [fact] {API_FACT}\n"
        "  Context: API integration discussion\n"
        f"- [pattern] {API_PATTERN}\n"
        "  Context: User assistance patterns\n"
        f"- [preference] {API_PREFERENCE}",
        "Failed to search memories: limit must be a whole number from 1 to 20, not 50.",
        "No memories found for 'sailing'.",
        f"My fact memories (1 total):\n- {API_FACT}\n  Context: API integration discussion",
        f"My capability memories (1 total):\n- {SQL_CAPABILITY}\n  Confidence: 0.7",
        "Failed to list memories: Invalid category 'opinion'",
        "Failed to list memories: limit must be a whole number from 1 to 50, not 0.",
    ]
    assert found[-2].data["content"] == "Here is what I know about APIs."
    # The replies went back to the model under their calls' ids.
    last = fake_openai.requests[-1]["messages"]
    assert [m["content"] for m in last if m["role"] == "tool"] == results(found)

    # Over REST: the memories with their category, context and confidence.
    base = f"/agents/{agent_id}/memory/archival"
    facts = client.get(base, params={"category": "fact"}).json()
    assert facts["total"] == 1
    assert [(m["content"], m["context"], m["confidence"]) for m in facts["memories"]] == [
        (API_FACT, "API integration discussion", 1.0)
    ]
    every = client.get(base).json()["memories"]
    assert sorted((m["category"], m["content"], m["confidence"]) for m in every) == [
        ("capability", SQL_CAPABILITY, 0.7),
        ("fact", API_FACT, 1.0),
        ("pattern", API_PATTERN, 1.0),
        ("preference", API_PREFERENCE, 1.0),
    ]
    searched = client.get(
        f"{base}/search", params={"query": "API authentication", "category": "pattern"}
    ).json()
    assert [(m["content"], m["context"]) for m in searched["memories"]] == [
        (API_PATTERN, "User assistance patterns")
    ]


def test_the_persona_follows_the_seeds_prompt_and_core_memory_stays_out(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    agent_id = categorized_agent(client, fake_openai, persona="Kind and brief.\nSigns as Kit.")
    created = client.post(
        f"/agents/{agent_id}/memory/blocks/human/lines", json={"content": "Name: Alice"}
    )
    assert created.status_code == 201, created.text
    conversation_id = new_conversation(client, agent_id)
    fake_openai.replies += [Reply(text="Hello!"), Reply(text="Hello again!")]
    send(client, conversation_id, "Hi")
    assert fake_openai.requests[0]["messages"][0]["content"] == (
        f"{INSTRUCTIONS}\n\nKind and brief.\nSigns as Kit."
    )
    clock.advance(1)
    send(client, conversation_id, "Hi again")
    # The hooks' section (seed 001) follows, as for every architecture; no block does.
    assert fake_openai.requests[1]["messages"][0]["content"] == (
        f"{INSTRUCTIONS}\n\nKind and brief.\nSigns as Kit.\n\n"
        "Recent conversation:\nuser: Hi\nassistant: Hello!"
    )


def test_full_blocks_are_neither_warned_of_nor_compacted(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    """The model never sees core memory here, so the runtime's upkeep leaves it alone."""
    agent_id = categorized_agent(client, fake_openai)
    notes = [f"Note {i}: kept" for i in range(3)]  # 9 words of 10: 90%
    created = client.post(
        f"/agents/{agent_id}/memory/blocks",
        json={"name": "notes", "word_limit": 10, "content": "\n".join(notes)},
    )
    assert created.status_code == 201, created.text
    conversation_id = new_conversation(client, agent_id)
    for turn in range(4):
        fake_openai.replies.append(Reply(text=f"Answer {turn}"))
        found = send(client, conversation_id, f"Turn {turn}")
        assert [e.name for e in found][-2:] == ["message", "run.completed"]
        assert not [e for e in found if e.name.startswith("memory.")]
        clock.advance(1)
    assert lines_of(client, agent_id, "notes") == notes
    assert client.get(f"/agents/{agent_id}/memory/archival").json()["memories"] == []


def test_the_architecture_is_offered_and_can_be_chosen_later(client: TestClient) -> None:
    form = client.get("/agents/schema").json()
    field = next(f for f in form["fields"] if f["name"] == "architecture")
    assert [o["value"] for o in field["options"]] == ["krishna-memgpt", "categorized-memory"]
    agent_id = client.post("/agents", json={"name": "Switcher"}).json()["id"]
    changed = client.patch(f"/agents/{agent_id}", json={"architecture": "categorized-memory"})
    assert (changed.status_code, changed.json()["architecture"]) == (200, "categorized-memory")
