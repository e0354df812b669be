"""Seed 000's key patterns, verbatim, and every model's round trip through the table."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from api.agents.models import Agent, AgentNameGuard
from api.conversations.messages.models import Message
from api.conversations.models import Conversation, SessionLookup
from api.memory.models import (
    ArchivalHashGuard,
    ArchivalMemory,
    CapacityWarning,
    CoreMemory,
    MemoryBlockDef,
)
from api.settings.models import ProviderSettings
from api.store import keys
from api.store.definition import load_definition
from api.store.entity import Entity
from api.store.sqlite import SqliteTable
from api.store.table import InvalidItem, InvalidKey, Key
from api.users.models import User

WHEN = datetime(2024, 1, 15, 10, 30, 0, 123456, tzinfo=UTC)

MODELS: list[tuple[Entity, Key]] = [
    (
        User(
            email="john@example.com",
            name="John",
            google_sub="123",
            created_at=WHEN,
            updated_at=WHEN,
        ),
        Key("User#john@example.com", "User#Metadata"),
    ),
    (
        Agent(
            agent_id="a1",
            created_by="john@example.com",
            agent_name="Helper",
            created_at=WHEN,
            updated_at=WHEN,
        ),
        Key("User#john@example.com", "Agent#a1"),
    ),
    (
        AgentNameGuard(created_by="john@example.com", normalized_name="helper", agent_id="a1"),
        Key("User#john@example.com", "AgentName#helper"),
    ),
    (
        ProviderSettings(
            user_email="john@example.com",
            provider_name="openai",
            encrypted_credentials="v1.k.n.c",
            key_id="k",
            updated_at=WHEN,
        ),
        Key("User#john@example.com", "ProviderSettings#openai"),
    ),
    (
        Conversation(
            conversation_id="c1",
            created_by="john@example.com",
            agent_id="a1",
            title="Hi",
            created_at=WHEN,
            updated_at=WHEN,
        ),
        Key("USER#john@example.com", "CONVERSATION#c1"),
    ),
    (
        SessionLookup(
            created_by="john@example.com", agent_id="a1", session_id="s-1", conversation_id="c1"
        ),
        Key("USER#john@example.com", "Session#a1#s-1"),
    ),
    (
        Message(
            conversation_id="c1",
            message_id="m1",
            role="user",
            content="Hello",
            created_at=WHEN,
            ttl=1_800_000_000,
        ),
        Key("CONVERSATION#c1", "MESSAGE#2024-01-15T10:30:00.123456Z#m1"),
    ),
    (
        MemoryBlockDef(agent_id="a1", block_name="human", is_default=True),
        Key("Agent#a1", "MemoryBlockDef#human"),
    ),
    (
        CoreMemory(
            agent_id="a1", block_name="human", lines=["Name: John"], word_count=2, version=3
        ),
        Key("Agent#a1", "CoreMemory#human"),
    ),
    (
        ArchivalMemory(
            agent_id="a1",
            memory_id="m9",
            content="Likes coffee",
            content_hash="ab" * 32,
            created_at=WHEN,
        ),
        Key("Agent#a1", "Archival#2024-01-15T10:30:00.123456Z#m9"),
    ),
    (
        ArchivalHashGuard(agent_id="a1", content_hash="ab" * 32, memory_id="m9"),
        Key("Agent#a1", f"ArchivalHash#{'ab' * 32}"),
    ),
    (
        CapacityWarning(agent_id="a1", block_name="human", warning_turns=2),
        Key("Agent#a1", "CapacityWarning#human"),
    ),
]


@pytest.mark.parametrize(("model", "key"), MODELS, ids=[type(m).__name__ for m, _ in MODELS])
async def test_models_use_the_seed_keys_and_round_trip(
    model: Entity, key: Key, tmp_path: Path
) -> None:
    item = model.to_dynamo_item()
    assert Key(item["pk"], item["sk"]) == key
    assert item["entity"] == model.ENTITY
    table = SqliteTable(tmp_path / "t.db", "models", load_definition())
    await table.create()
    await table.put(item)
    stored = await table.get(key)
    assert stored is not None
    assert type(model).from_dynamo_item(stored) == model
    await table.close()


def test_an_item_of_another_entity_is_refused() -> None:
    item = MODELS[0][0].to_dynamo_item()
    with pytest.raises(InvalidItem, match="Agent"):
        Agent.from_dynamo_item(item)


def test_conversations_are_indexed_by_agent_in_time_order() -> None:
    conversation = MODELS[4][0]
    item = conversation.to_dynamo_item()
    pk, condition = keys.conversations_of_agent("a1")
    assert item["gsi1pk"] == pk
    assert item["gsi1sk"].startswith(condition.value)
    assert item["gsi1sk"] == "CONVERSATION#2024-01-15T10:30:00.123456Z#c1"


def test_timestamps_sort_as_text_in_time_order() -> None:
    moments = [0.5, 9.999999, 10.0, 1_700_000_000.0, 1_700_000_000.000001, 4_102_444_800.0]
    stamps = [keys.timestamp(t) for t in moments]
    assert stamps == sorted(stamps)
    assert len({len(s) for s in stamps}) == 1


@pytest.mark.parametrize(
    "build",
    [
        lambda: keys.user(""),
        lambda: keys.agent("a@b.c", ""),
        lambda: keys.agent("", "a1"),
        lambda: keys.message("c1", "", "m1"),
        lambda: keys.session_lookup("a@b.c", "a1", ""),
        lambda: keys.archival_hash_guard("a1", ""),
    ],
)
def test_a_key_with_an_empty_part_is_refused(build: object) -> None:
    with pytest.raises(InvalidKey):
        build()  # type: ignore[operator]


def test_kinds_sharing_a_partition_do_not_overlap() -> None:
    partition_kinds = [
        ("Agent#a1", keys.archival_of("a1")[1].value, keys.archival_hash_guard("a1", "h").sk),
        # A deleted memory's copy is never read as a memory (search, listings, export).
        ("Agent#a1", keys.archival_of("a1")[1].value, keys.deleted_archival("a1", "m1").sk),
        ("User#x", keys.agents_of("x")[1].value, keys.agent_name_guard("x", "n").sk),
        (
            "USER#x",
            keys.conversation("x", "c1").sk.removesuffix("c1"),
            keys.session_lookup("x", "a", "s").sk,
        ),
    ]
    for _, prefix, other_sk in partition_kinds:
        assert not other_sk.startswith(prefix)


def test_one_query_reads_an_agents_blocks_and_warnings_and_nothing_else() -> None:
    """The range `blocks_and_warnings_of` reads holds the three kinds and no other kind of
    the agent's partition: a kind added between them would be read on every turn."""
    pk, between = keys.blocks_and_warnings_of("a1")
    assert between.upper is not None
    lower, upper = between.value, between.upper
    kinds = {}
    for line in (keys.__doc__ or "").splitlines():
        parts = line.split()
        if len(parts) > 3 and parts[1] == "Agent#{agent_id}" and parts[2] == "/":
            kinds[parts[0]] = parts[3].partition("{")[0]  # the sort key's fixed start
    assert len(kinds) >= 10, kinds  # the catalogue was read
    inside = {
        kind for kind, start in kinds.items() if start <= upper and start + "\U0010ffff" >= lower
    }
    assert inside == {keys.CAPACITY_WARNING, keys.CORE_MEMORY, keys.MEMORY_BLOCK_DEF}
    assert pk == keys.core_memory("a1", "b").pk == keys.memory_block_def("a1", "b").pk
