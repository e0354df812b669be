"""The offline demo model: stores what it is told with the memory tool, answers from memory."""

from api.llm.offline import APPEND_TOOL, OfflineProvider, facts_in
from api.llm.types import (
    ChatMessage,
    ChatRequest,
    Finish,
    LLMEvent,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    ToolSpec,
)

TOOLS = [
    ToolSpec(APPEND_TOOL, "Add a line to a core memory block", {"type": "object", "properties": {}})
]


async def run(messages: list[ChatMessage], tools: list[ToolSpec] = TOOLS) -> list[LLMEvent]:
    request = ChatRequest(model="offline-demo", messages=messages, tools=tools)
    return [event async for event in OfflineProvider().stream(request)]


def text_of(events: list[LLMEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_alice_is_stored_one_fact_per_step_then_acknowledged() -> None:
    said = ChatMessage("user", "My name is Alice and I work at Google")
    first = await run([ChatMessage("system", "You are helpful."), said])
    calls = [e.call for e in first if isinstance(e, ToolCallEvent)]
    assert [c.arguments for c in calls] == [{"block": "human", "content": "Name: Alice"}]
    assert first[-1] == Finish("tool_calls")

    history: list[ChatMessage] = [said]
    for call in calls:
        history += [
            ChatMessage("assistant", tool_calls=(call,)),
            ChatMessage("tool", "Appended ...", tool_call_id=call.id),
        ]
    second = await run(history)
    calls = [e.call for e in second if isinstance(e, ToolCallEvent)]
    assert [c.arguments for c in calls] == [{"block": "human", "content": "Works at: Google"}]

    history += [
        ChatMessage("assistant", tool_calls=(calls[0],)),
        ChatMessage("tool", "Appended ...", tool_call_id=calls[0].id),
    ]
    third = await run(history)
    assert not any(isinstance(e, ToolCallEvent) for e in third)
    assert "Nice to meet you, Alice!" in text_of(third)
    assert "offline demo model" in text_of(third)
    assert third[-1] == Finish("stop")


async def test_it_answers_from_core_memory() -> None:
    system = "<core_memory>\n[Human - Facts about the user]\n1: Name: Alice\n2: Lives in: Paris\n"
    events = await run([ChatMessage("system", system), ChatMessage("user", "What is my name?")])
    assert text_of(events).startswith("Your name is Alice.")
    where = await run([ChatMessage("system", system), ChatMessage("user", "Where do I live?")])
    assert text_of(where).startswith("You live in Paris.")
    unknown = await run([ChatMessage("system", system), ChatMessage("user", "What do I like?")])
    assert "don't know" in text_of(unknown)


async def test_without_the_memory_tool_it_only_answers() -> None:
    events = await run([ChatMessage("user", "My name is Bob")], tools=[])
    assert not any(isinstance(e, ToolCallEvent) for e in events)
    assert "Nice to meet you, Bob!" in text_of(events)


def test_facts_are_read_in_the_order_they_were_said() -> None:
    facts = facts_in("I live in Lisbon, I like green tea and my name is carol.")
    assert [(f.label, f.value) for f in facts] == [
        ("Lives in", "Lisbon"),
        ("Likes", "green tea"),
        ("Name", "Carol"),
    ]


async def test_it_is_deterministic() -> None:
    messages = [ChatMessage("user", "hello there")]
    assert text_of(await run(messages)) == text_of(await run(messages))
    assert "offline demo model" in text_of(await run(messages))


def test_tool_call_type_is_hashable() -> None:
    assert ToolCall("a", "b", {}) == ToolCall("a", "b", {})
