"""Letta's agent file (.af, its V1 server's AgentFileSchema), imported one way: the fixture is
written by us in Letta's documented shape (letta/schemas/agent_file.py)."""

import json
from pathlib import Path

from api.conversations.messages import service as messages_service
from api.kit.clock import FrozenClock
from api.memory import service as memory
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.transfer import letta
from api.transfer import service as transfer
from tests.transfer.conftest import BOB, everything, write

FIXTURE = Path(__file__).parent / "fixtures" / "letta_v1.af"


async def test_a_letta_agent_file_becomes_an_agent_with_core_memory_and_a_conversation(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, clock: FrozenClock
) -> None:
    (report,) = await transfer.import_file(repos_sqlite, search_sqlite, BOB, FIXTURE)
    assert report.created
    assert report.agent_name == "Support Bot"
    agent = await repos_sqlite.agents.get(BOB, report.agent_id)
    assert agent is not None
    assert agent.agent_persona == "I am a patient support agent for Acme."
    assert (agent.agent_provider, agent.agent_model) == ("offline", "offline-demo")
    assert agent.metadata == {"imported_from": "letta", "letta_agent_id": "agent-0"}
    assert any("'openai' is not configured" in note for note in report.notes)

    blocks = {v.name: v for v in await memory.list_blocks(repos_sqlite, report.agent_id)}
    assert set(blocks) == {"human", "persona", "policies"}
    assert blocks["human"].lines == ("Name: Dana", "Prefers email over phone.")
    assert blocks["human"].is_default
    assert blocks["persona"].is_default
    assert not blocks["policies"].is_default
    # Letta's character limits as words: 5000, 2000 and 20000 characters.
    limits = {name: v.word_limit for name, v in blocks.items()}
    assert limits == {"human": 834, "persona": 334, "policies": 3334}
    assert blocks["policies"].description == "Store policies."

    listed, _ = await repos_sqlite.conversations.list_for_agent(
        report.agent_id, limit=10, cursor=None
    )
    (conversation,) = listed
    assert conversation.title == "Imported from Letta: Support Bot"
    said, _ = await repos_sqlite.messages.oldest_first(
        conversation.conversation_id, limit=50, cursor=None
    )
    assert [(m.role, m.content) for m in said] == [
        ("user", "Hi, my order 4417 arrived broken."),
        ("assistant", ""),
        ("tool", '{"status": "delivered", "damaged": true}'),
        ("assistant", "Sorry about that! A replacement for order 4417 is on its way."),
    ]
    assert said[1].tool_calls == [
        {"id": "call_abc123", "name": "lookup_order", "arguments": {"order_id": "4417"}}
    ]
    assert said[2].tool_call_id == "call_abc123"
    found = await messages_service.search(
        repos_sqlite, search_sqlite, BOB, report.agent_id, "order 4417"
    )
    assert found.total == 2  # the user's and the assistant's text; tool plumbing is not searched

    skipped = {(s.kind, s.reason): s.count for s in report.skipped.values()}
    assert skipped[("tool", "imported code is never run: lookup_order, send_message")] == 2
    assert skipped[("message", "Letta's system prompt: our architecture writes its own")] == 1

    before = await everything(repos_sqlite.table)
    (again,) = await transfer.import_file(repos_sqlite, search_sqlite, BOB, FIXTURE)
    assert not again.created
    assert again.agent_id == report.agent_id
    assert await everything(repos_sqlite.table) == before


async def test_letta_blocks_are_converted_to_fit(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, tmp_path: Path
) -> None:
    """Labels normalized, long lines cut at words, a value over its limit kept whole (the
    limit grows to hold it), and blocks that cannot be named left out and reported."""
    document = json.loads(FIXTURE.read_text())
    document["blocks"] = [
        {"id": "block-0", "label": "Project Notes", "value": "word " * 600, "limit": 100},
        {"id": "block-1", "label": "!!!", "value": "x", "limit": 100},
    ]
    document["agents"][0]["block_ids"] = ["block-0", "block-1", "block-9"]
    document["agents"][0]["messages"] = []
    path = write(tmp_path, json.dumps(document).encode(), "agent.af")
    (report,) = await transfer.import_file(repos_sqlite, search_sqlite, BOB, path)
    blocks = {v.name: v for v in await memory.list_blocks(repos_sqlite, report.agent_id)}
    notes = blocks["project_notes"]
    assert all(len(line) <= 2000 for line in notes.lines)
    assert len(notes.lines) == 2
    assert notes.word_limit == 600  # 100 characters would be 17 words: too few to hold it
    assert set(blocks) == {"project_notes", "human", "persona"}  # the defaults added
    left = [s for s in report.skipped.values() if s.kind == "block"]
    assert sum(s.count for s in left) == 2


def test_a_character_limit_becomes_words() -> None:
    assert letta.word_limit(5000, []) == 834
    assert letta.word_limit(None, []) == 834  # Letta's old default
    assert letta.word_limit(10**7, []) == 20_000  # our largest
