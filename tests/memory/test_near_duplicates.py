"""Archival memory holds a text once, whatever its case, spacing or Unicode form: through
every writer over HTTP (REST, the tools in a turn, seed 004's add), and for memories
stored before texts were normalized (their guards keyed by the hash of the text as
written)."""

import asyncio
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.memory import archival
from api.memory import repository as memory_repository
from api.memory.models import ArchivalMemory
from api.search.engine import SearchEngine
from api.search.repository import SearchRepository
from api.store import build_table
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.runtime.conftest import (
    OPENAI_KEY,
    new_agent,
    new_conversation,
    running,
    send,
    use_openai,
)

SHOPS = "Favorite coffee shops: Monmouth, Prufrock"
# The same text, as a model or a person may write it again.
SAME = [
    "  Favorite  coffee  shops:  Monmouth,  Prufrock ",  # the issue's
    "favorite coffee shops: monmouth, prufrock",
    "FAVORITE COFFEE SHOPS:\nMONMOUTH,\tPRUFROCK",
    "Favorite\u00a0coffee shops: Monmouth,\u3000Prufrock",  # no-break, ideographic spaces
    "\uff26avorite coffee shops\uff1a Monmouth, Prufrock",  # full-width F and colon
    "Favorite coffee shops: Monmouth, Prufrock".replace("ff", "\ufb00"),  # the ff ligature
]
# Not the same: other words, other punctuation.
OTHERS = [
    "Favorite coffee shops: Monmouth",
    "Favorite coffee shops: Monmouth, Prufrock.",
    "Favorite coffee shops - Monmouth, Prufrock",
]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        sqlite_path=tmp_path / "app.db", encryption_key="k" * 40, memory_embedding_backend="none"
    )


@pytest.fixture
def client(settings: Settings, clock: FrozenClock) -> Iterator[TestClient]:
    with running(settings, clock) as client:
        yield client


def insert(client: TestClient, agent: str, content: str, status: int) -> dict[str, Any]:
    answer = client.post(f"/agents/{agent}/memory/archival", json={"content": content})
    assert answer.status_code == status, answer.text
    found: dict[str, Any] = answer.json()
    return found


def contents(client: TestClient, agent: str) -> list[str]:
    listed = client.get(f"/agents/{agent}/memory/archival", params={"limit": 100})
    assert listed.status_code == 200, listed.text
    return [m["content"] for m in listed.json()["memories"]]


def test_normalized_text() -> None:
    assert {archival.normalized(text) for text in [SHOPS, *SAME]} == {
        "favorite coffee shops: monmouth, prufrock"
    }
    assert len({archival.normalized(text) for text in [SHOPS, *OTHERS]}) == 1 + len(OTHERS)
    assert archival.normalized("Stra\u00dfe") == archival.normalized("STRASSE")  # case folded
    for text in [SHOPS, *SAME, *OTHERS]:
        once = archival.normalized(text)
        assert archival.normalized(once) == once


def test_rest_insert_of_the_same_text_returns_the_stored_memory(client: TestClient) -> None:
    agent = new_agent(client)
    first = insert(client, agent, SHOPS, 201)
    assert first["content_hash"] == hashlib.sha256(archival.normalized(SHOPS).encode()).hexdigest()
    for text in SAME:
        again = insert(client, agent, text, 200)
        assert again == first  # the memory as it was stored: its text unchanged
    for text in OTHERS:
        insert(client, agent, text, 201)
    assert sorted(contents(client, agent)) == sorted([SHOPS, *OTHERS])

    # Deleted, the text can be stored again, in any of its forms.
    deleted = client.delete(f"/agents/{agent}/memory/archival/{first['id']}")
    assert deleted.status_code == 204, deleted.text
    stored = insert(client, agent, SAME[1], 201)
    assert stored["content"] == SAME[1]
    insert(client, agent, SHOPS, 200)


def results(found: list[Any]) -> list[str]:
    return [e.data["content"] for e in found if e.name == "tool.result"]


def tool(name: str, **arguments: Any) -> ToolCallScript:
    return ToolCallScript(name, json.dumps(arguments))


def today(clock: FrozenClock) -> str:
    return datetime.fromtimestamp(clock.now(), UTC).strftime("%Y-%m-%d")


def test_the_insert_tool_in_a_turn_answers_seed_000s_duplicate_reply(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    agent = use_openai(client, fake_openai)
    conversation = new_conversation(client, agent)
    day = today(clock)
    fake_openai.replies += [
        Reply(tool_calls=[tool("archival_memory_insert", content=SHOPS)]),
        Reply(tool_calls=[tool("archival_memory_insert", content=SAME[0])]),
        Reply(tool_calls=[tool("archival_memory_insert", content=SAME[2])]),
        Reply(text="Noted."),
    ]
    assert results(send(client, conversation, "Remember my coffee shops.")) == [
        f'Inserted into archival memory ({day}): "{SHOPS}"',
        f'Already in archival memory ({day}): "{SHOPS}" (no change)',
        f'Already in archival memory ({day}): "{SHOPS}" (no change)',
    ]
    assert contents(client, agent) == [SHOPS]


def test_seed_003s_store_memory_in_a_turn_keeps_one_copy(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    saved = client.put(
        "/settings/providers/openai",
        json={"api_key": OPENAI_KEY, "base_url": fake_openai.base_url},
    )
    assert saved.status_code == 200, saved.text
    agent = new_agent(
        client,
        "Sorter",
        architecture="categorized-memory",
        provider="openai",
        model="gpt-4o-mini",
    )
    conversation = new_conversation(client, agent)
    fake_openai.replies += [
        Reply(tool_calls=[tool("store_memory", category="preference", content=SHOPS)]),
        Reply(tool_calls=[tool("store_memory", category="fact", content=SAME[1])]),
        Reply(text="Noted."),
    ]
    assert results(send(client, conversation, "Remember my coffee shops.")) == [
        f"Stored preference memory: {SHOPS}",
        f"Already stored as preference memory: {SHOPS} (no change)",
    ]
    assert contents(client, agent) == [SHOPS]


def test_seed_004s_add_stores_a_text_once(client: TestClient) -> None:
    made = client.post("/memory/initialize", json={"user_id": "customer_7"})
    assert made.status_code == 200, made.text
    agent = made.json()["agent_id"]
    insert(client, agent, SHOPS, 201)

    def add(*said: tuple[str, str]) -> None:
        body = {
            "user_id": "customer_7",
            "messages": [{"role": role, "content": content} for role, content in said],
            "store_in_archival": True,
        }
        added = client.post("/memory/add", json=body)
        assert added.status_code in (200, 202), added.text

    # A message saying a stored text again, and two messages saying one new text.
    add(("user", SAME[0]), ("user", "I  love pizza"), ("assistant", "i love PIZZA"))
    # The new text, said again in a later add.
    add(("assistant", "I LOVE PIZZA "))
    listed = client.get(f"/agents/{agent}/memory/archival").json()["memories"]
    assert sorted((m["content"], tuple(m["tags"])) for m in listed) == [
        ("Favorite coffee shops: Monmouth, Prufrock", ()),
        ("I  love pizza", ("user", "assistant")),
    ]


# --- memories stored before texts were normalized ----------------------------------------


def store_as_before(settings: Settings, clock: FrozenClock, agent: str, text: str) -> str:
    """A memory written into the app's SQLite file as servers wrote them before texts were
    normalized: its hash, and its guard's key, the SHA-256 of its text as written."""

    async def write() -> str:
        table = build_table(settings, clock)
        try:
            created_at = datetime.fromtimestamp(clock.now(), UTC)
            memory = ArchivalMemory(
                agent_id=agent,
                memory_id=memory_repository.new_memory_id(created_at),
                content=text,
                content_hash=hashlib.sha256(text.encode()).hexdigest(),
                created_at=created_at,
            )
            engine = SearchEngine(SearchRepository(table), None, clock)
            assert await memory_repository.insert_archival(engine, memory, {})
            return memory.memory_id
        finally:
            await table.close()

    return asyncio.run(write())


def test_a_memory_stored_before_normalization_is_still_a_duplicate(
    client: TestClient, settings: Settings, clock: FrozenClock
) -> None:
    agent = new_agent(client)
    old = store_as_before(settings, clock, agent, SHOPS)
    legacy_hash = hashlib.sha256(SHOPS.encode()).hexdigest()
    assert legacy_hash != archival.content_hash(SHOPS)

    # Its text exactly, or with its spaces otherwise, is the stored memory.
    for text in (SHOPS, f"  {SHOPS}\n", SAME[0], SHOPS.replace(" ", "\n")):
        again = insert(client, agent, text, 200)
        assert (again["id"], again["content_hash"]) == (old, legacy_hash)
    # Seed 004's add finds it too.
    made = client.post("/memory/initialize", json={"user_id": "legacy"})
    subject_agent = made.json()["agent_id"]
    store_as_before(settings, clock, subject_agent, SHOPS)
    body = {
        "user_id": "legacy",
        "messages": [{"role": "user", "content": SAME[0]}],
        "store_in_archival": True,
    }
    assert client.post("/memory/add", json=body).status_code in (200, 202)
    assert contents(client, subject_agent) == [SHOPS]

    # Deleted, its guard goes with it: the text is stored anew, under its normalized hash.
    assert client.delete(f"/agents/{agent}/memory/archival/{old}").status_code == 204
    stored = insert(client, agent, SHOPS, 201)
    assert stored["content_hash"] == archival.content_hash(SHOPS)
    insert(client, agent, SAME[1], 200)
    assert contents(client, agent) == [SHOPS]


def test_a_guard_left_by_a_memory_gone_does_not_block_its_text(
    client: TestClient, settings: Settings, clock: FrozenClock
) -> None:
    """A guard of the older kind whose memory is missing (a crash between two writes of an
    older server) is removed by the insert that finds it, which then stores the text."""
    agent = new_agent(client)
    old = store_as_before(settings, clock, agent, SHOPS)

    async def drop_the_memory_only() -> None:
        table = build_table(settings, clock)
        try:
            key = memory_repository.archival_key(agent, old)
            assert key is not None
            await table.delete(key)
        finally:
            await table.close()

    asyncio.run(drop_the_memory_only())
    stored = insert(client, agent, SHOPS, 201)
    assert stored["id"] != old
    assert insert(client, agent, SHOPS, 200)["id"] == stored["id"]

    async def guards() -> list[str]:
        table = build_table(settings, clock)
        try:
            hashes = [hashlib.sha256(SHOPS.encode()).hexdigest(), archival.content_hash(SHOPS)]
            found = await memory_repository.MemoryRepository(table).archival_guards(agent, hashes)
            return [found[h].memory_id if h in found else "" for h in hashes]
        finally:
            await table.close()

    assert asyncio.run(guards()) == ["", stored["id"]]  # the older kind's is gone
