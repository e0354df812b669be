"""A block at its warning level: the model is told in every turn's prompt, the stream says
so after each turn, and on the third warned turn the block is compacted (its lines kept in
archival memory) and the stream says that too."""

from fastapi.testclient import TestClient

from api.kit.clock import FrozenClock
from tests.fakes.llm_servers import FakeLLM
from tests.runtime.conftest import lines_of, new_conversation, send, use_openai

NOTES = [f"Note {i}: kept" for i in range(3)]  # 9 words of 10: 90%


def test_warnings_then_compaction(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    agent_id = use_openai(client, fake_openai)
    created = client.post(
        f"/agents/{agent_id}/memory/blocks",
        json={"name": "notes", "word_limit": 10, "content": "\n".join(NOTES)},
    )
    assert created.status_code == 201, created.text
    conversation_id = new_conversation(client, agent_id)

    for turn in (1, 2):
        found = send(client, conversation_id, f"Turn {turn}")
        warnings = [e.data for e in found if e.name == "memory.warning"]
        assert warnings == [
            {
                "run_id": found[0].data["run_id"],
                "block": "notes",
                "percent_used": 90,
                "word_count": 9,
                "word_limit": 10,
                "warned_turns": turn,
                "compacts_after": 3,
            }
        ]
        assert [e.name for e in found][-2:] == ["memory.warning", "run.completed"]
        system = fake_openai.requests[-1]["messages"][0]["content"]
        assert "Warning: [notes] is at 90% capacity (9/10 words)." in system
        clock.advance(1)

    found = send(client, conversation_id, "Turn 3")
    compacted = [e.data for e in found if e.name == "memory.compacted"]
    assert [(c["block"], c["words_before"]) for c in compacted] == [("notes", 9)]
    assert not [e for e in found if e.name == "memory.warning"]
    assert compacted[0]["words_after"] < 9
    assert compacted[0]["archived_lines"] >= 1
    # Nothing lost: every line taken out of the block is in archival memory.
    kept = lines_of(client, agent_id, "notes")
    archived = client.get(f"/agents/{agent_id}/memory/archival").json()
    texts = " ".join(m["content"] for m in archived["memories"])
    for line in NOTES:
        assert line in kept or f"[notes] {line}" in texts
