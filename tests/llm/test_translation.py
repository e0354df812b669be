"""How the adapters translate a conversation, where providers differ."""

from api.llm import anthropic, bedrock
from api.llm.openai import _slot
from api.llm.types import ChatMessage, ToolCall


def test_tool_call_fragments_without_an_index_are_told_apart_by_id() -> None:
    calls: dict[int, dict[str, str]] = {}
    for index, call_id in [(None, "c1"), (None, None), (None, "c2"), (None, None)]:
        slot = _slot(calls, index, call_id)
        call = calls.setdefault(slot, {"id": "", "name": "", "args": ""})
        call["id"] = call_id or call["id"]
    assert [c["id"] for c in calls.values()] == ["c1", "c2"]
    assert _slot(calls, 5, "c9") == 5


def test_empty_text_never_reaches_anthropic_or_bedrock() -> None:
    call = ToolCall("t1", "core_memory_read", {"block": "human"})
    messages = [
        ChatMessage("system", "sys"),
        ChatMessage("user", ""),
        ChatMessage("user", "hello"),
        ChatMessage("assistant", "", tool_calls=(call,)),
        ChatMessage("tool", "[human] Core Memory (0 lines, 0/5000 words):", tool_call_id="t1"),
    ]
    system, turns = anthropic.to_wire(messages)
    assert system == "sys"
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert all(block.get("text") != "" for t in turns for block in t["content"])
    system_blocks, converse = bedrock.to_wire(messages)
    assert system_blocks == [{"text": "sys"}]
    assert [t["role"] for t in converse] == ["user", "assistant", "user"]
    assert all(block.get("text") != "" for t in converse for block in t["content"])


def test_a_providers_message_quoting_the_key_is_scrubbed() -> None:
    from api.llm.errors import REDACTED, ProviderRejected, scrub

    key = "sk-proj-ABCDEFGHIJKLMNOP1234"
    said = f"Incorrect API key provided: {key}. Also '{key[:14]}' and ...{key[-10:]}."
    cleaned = scrub(said, [key])
    assert key not in cleaned
    assert key[:14] not in cleaned
    assert key[-10:] not in cleaned
    assert cleaned.count(REDACTED) == 3
    error = ProviderRejected(f"OpenAI refused the request (400): {said}").scrubbed([key])
    assert key[-10:] not in error.message
    assert key[-10:] not in str(error)
    assert scrub("nothing secret here", [key]) == "nothing secret here"
