"""The offline demo model: stores what it is told with the memory tool, answers from memory."""

import pytest

from api.llm.offline import (
    APPEND_TOOL,
    DELETE_TOOL,
    DISCLAIMER,
    REPLACE_TOOL,
    OfflineProvider,
    facts_in,
    reply_to,
    retractions_in,
    said_recently,
)
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


@pytest.mark.parametrize(
    "asked",
    ["What do you remember about me?", "what do you know about me", "What have you learned?"],
)
async def test_what_it_remembers_is_all_of_the_human_block(asked: str) -> None:
    system = "<core_memory>\n[Human - Facts]\n1: Name: Alice\n2: Lives in: Paris\n</core_memory>"
    events = await run([ChatMessage("system", system), ChatMessage("user", asked)])
    assert text_of(events).startswith(
        "Here is what I remember about you: Name: Alice; Lives in: Paris."
    )
    empty = await run(
        [
            ChatMessage("system", "<core_memory>\n[Human - Facts]\n</core_memory>"),
            ChatMessage("user", asked),
        ]
    )
    assert text_of(empty).startswith("I don't remember anything about you yet.")


async def test_it_says_plainly_what_it_cannot_do() -> None:
    poem = await run([ChatMessage("user", "Write me a poem about the sea")])
    assert text_of(poem).startswith("I can't help with that: I am the offline demo model")
    assert "Providers" in text_of(poem)
    hello = await run([ChatMessage("user", "Hello there")])
    assert text_of(hello).startswith("Hello! I am the offline demo model")


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


# --- facts that stay current --------------------------------------------------------------

CORE_TOOLS = [
    ToolSpec(name, "", {"type": "object", "properties": {}})
    for name in (APPEND_TOOL, REPLACE_TOOL, DELETE_TOOL)
]
MEMORY = (
    "You are Kit.\n\n<core_memory>\n[Human - Facts about the user]\n1: Name: Alice Moreira\n"
    "2: Lives in: Lisbon\n3: Works at: Acme\n4: Likes: tea\n\n[Persona - Your traits]\n"
    "1: Name: Kit\n</core_memory>\n\nRecent conversation:\nuser: My name is Alice Moreira"
)


def steps(text: str, system: str = MEMORY) -> list[tuple[str, dict[str, object]]]:
    """The edits a turn makes of `text`: the calls of each step until it answers."""
    history = [ChatMessage("system", system), ChatMessage("user", text)]
    edits: list[tuple[str, dict[str, object]]] = []
    for _ in range(10):
        request = ChatRequest(model="offline-demo", messages=history, tools=CORE_TOOLS)
        _, call = reply_to(request)
        if call is None:
            return edits
        edits.append((call.name, dict(call.arguments)))
        history += [
            ChatMessage("assistant", tool_calls=(call,)),
            ChatMessage("tool", "done", tool_call_id=call.id),
        ]
    raise AssertionError("the model never answered")


def replace(line_number: int, content: str) -> tuple[str, dict[str, object]]:
    return REPLACE_TOOL, {"block": "human", "line_number": line_number, "new_content": content}


def delete(line_number: int) -> tuple[str, dict[str, object]]:
    return DELETE_TOOL, {"block": "human", "line_number": line_number}


def append(content: str) -> tuple[str, dict[str, object]]:
    return APPEND_TOOL, {"block": "human", "content": content}


@pytest.mark.parametrize(
    ("said", "edits"),
    [
        ("Actually, call me Bob", [replace(1, "Name: Bob")]),
        ("call me bob", [replace(1, "Name: Bob")]),
        ("Call me Bob from now on, please.", [replace(1, "Name: Bob")]),
        ("My name is Bob", [replace(1, "Name: Bob")]),
        ("I moved to Porto", [replace(2, "Lives in: Porto")]),
        ("I've just moved to Porto!", [replace(2, "Lives in: Porto")]),
        ("I live in Porto now, not Lisbon any more", [replace(2, "Lives in: Porto")]),
        ("Not Lisbon any more.", [delete(2)]),
        ("I'm not in lisbon anymore", [delete(2)]),
        ("I don't work at Acme any more", [delete(3)]),
        ("I no longer work for Acme.", [delete(3)]),
        ("I work at Globex now", [replace(3, "Works at: Globex")]),
        ("I don't like tea any more", [delete(4)]),
        # Likes add up: a new one is appended, never replaces.
        ("I like coffee", [append("Likes: coffee")]),
        # Said again as it is: appended, which changes nothing.
        ("My name is Alice Moreira", [append("Name: Alice Moreira")]),
        # What is no longer true and memory does not say: nothing to do.
        ("I don't work at Globex any more", []),
        # Not names, and not corrections.
        ("Call me back later", []),
        ("please call me when you can", []),
        ("Don't call me Bob", []),
        # Two facts: each its own step, line numbers as the edits leave them.
        (
            "Call me Bob and I don't work at Acme any more. I live in Porto",
            [replace(1, "Name: Bob"), replace(2, "Lives in: Porto"), delete(3)],
        ),
    ],
)
def test_a_changed_fact_replaces_its_line(said: str, edits: list[object]) -> None:
    assert steps(said) == edits


def test_lines_of_one_label_said_twice_become_one() -> None:
    twice = MEMORY.replace("4: Likes: tea", "4: Name: Bob\n5: Likes: tea")
    assert steps("Call me Carol", twice) == [replace(1, "Name: Carol"), delete(4)]


def test_a_new_fact_in_an_empty_block_is_appended() -> None:
    empty = "<core_memory>\n[Human - Facts about the user]\n\n[Persona]\n1: Kind\n</core_memory>"
    assert steps("Call me Bob", empty) == [append("Name: Bob")]
    assert steps("I moved to Porto", "You are helpful.") == [append("Lives in: Porto")]


async def test_offered_only_the_append_tool_it_appends_as_before() -> None:
    said = ChatMessage("user", "I moved to Porto")
    events = await run([ChatMessage("system", MEMORY), said])
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.name, c.arguments) for c in calls] == [
        (APPEND_TOOL, {"block": "human", "content": "Lives in: Porto"})
    ]


async def test_a_correction_is_acknowledged_as_one() -> None:
    said = ChatMessage("user", "Actually, call me Bob")
    [(name, arguments)] = steps(said.content)
    call = ToolCall("call_1", name, arguments)
    history = [
        ChatMessage("system", MEMORY),
        said,
        ChatMessage("assistant", tool_calls=(call,)),
        ChatMessage("tool", "Replaced ...", tool_call_id="call_1"),
    ]
    answered = await run(history, tools=CORE_TOOLS)
    assert text_of(answered) == f"Got it, Bob! I've updated my memory. {DISCLAIMER}"
    forgotten = await run(
        [ChatMessage("system", MEMORY), ChatMessage("user", "I don't work at Globex any more")],
        tools=CORE_TOOLS,
    )
    assert text_of(forgotten) == f"Got it! {DISCLAIMER}"


def test_corrections_are_read_with_their_values() -> None:
    assert retractions_in("I live in Porto now, not Lisbon any more") == [(None, "Lisbon")]
    assert retractions_in("I don't work at Acme anymore, I don't live in Rome") == [
        ("Works at", "Acme"),
        ("Lives in", "Rome"),
    ]
    assert [(f.label, f.value) for f in facts_in("I moved to Porto, call me Bob")] == [
        ("Lives in", "Porto"),
        ("Name", "Bob"),
    ]


def test_the_recent_conversation_is_read_as_it_stands_now() -> None:
    system = (
        "Recent conversation:\nuser: I prefer tea\nuser: I live in Lisbon\n"
        "user: I moved to Porto\nuser: I work at Acme\nuser: I don't work at Acme any more\n"
        "user: I prefer green tea"
    )
    assert said_recently(system, "Lives in") == ["Porto"]
    assert said_recently(system, "Works at") == []
    assert said_recently(system, "Prefers") == ["tea", "green tea"]  # they add up


def _tool(name: str) -> ToolSpec:
    return ToolSpec(name, name, {"type": "object", "properties": {}})


SEARCHED = (
    'Archival Memory Search for "coffee" (Page 1 of 1, 2 total):\n\n'
    "[1] (2026-01-15) Drinks dark roast coffee every morning, before the news...\n"
    "[2] (2026-01-02) Takes no sugar."
)


@pytest.mark.parametrize(
    ("asked", "topic"),
    [
        ("What do you remember about my coffee?", "coffee"),
        ("Do you recall the trip to Rome?", "trip to Rome"),
        ("Search your memory for Lisbon", "Lisbon"),
        ("What did I tell you about my sister's wedding?", "sister's wedding"),
    ],
)
def test_a_topic_is_looked_up_with_the_search_tool_then_answered(asked: str, topic: str) -> None:
    for searcher in ("archival_memory_search", "search_memories"):
        tools = [_tool(APPEND_TOOL), _tool(searcher)]
        history = [ChatMessage("system", "You are helpful."), ChatMessage("user", asked)]
        text, call = reply_to(ChatRequest(model="offline-demo", messages=history, tools=tools))
        assert call is not None
        assert (text, call.name, dict(call.arguments)) == ("", searcher, {"query": topic})

        history += [
            ChatMessage("assistant", tool_calls=(call,)),
            ChatMessage("tool", SEARCHED, tool_call_id=call.id),
        ]
        text, again = reply_to(ChatRequest(model="offline-demo", messages=history, tools=tools))
        assert again is None
        assert text == (
            "From my archival memory: Drinks dark roast coffee every morning, before the news…; "
            f"Takes no sugar. {DISCLAIMER}"
        )


def test_a_search_that_finds_nothing_is_said_and_seed_003s_replies_are_read() -> None:
    asked = ChatMessage("user", "Do you remember the boat?")
    call = ToolCall(id="c1", name="search_memories", arguments={"query": "boat"})
    for reply, said in [
        (
            "No memories found for 'boat'.",
            f"I found nothing about boat in my archival memory. {DISCLAIMER}",
        ),
        (
            "Found 1 memory for 'boat':\n- [fact] Owns a red boat\n  Context: sailing",
            f"From my archival memory: Owns a red boat. {DISCLAIMER}",
        ),
    ]:
        history = [
            asked,
            ChatMessage("assistant", tool_calls=(call,)),
            ChatMessage("tool", reply, tool_call_id="c1"),
        ]
        request = ChatRequest(model="offline-demo", messages=history, tools=[_tool(call.name)])
        assert reply_to(request) == (said, None)


@pytest.mark.parametrize("asked", ["Do you remember me?", "What do you know about me?"])
def test_a_question_about_the_person_is_no_topic(asked: str) -> None:
    tools = [_tool(APPEND_TOOL), _tool("archival_memory_search")]
    request = ChatRequest(model="offline-demo", messages=[ChatMessage("user", asked)], tools=tools)
    assert reply_to(request)[1] is None


def test_without_a_search_tool_a_topic_is_beyond_it() -> None:
    request = ChatRequest(
        model="offline-demo",
        messages=[ChatMessage("user", "What do you remember about coffee?")],
        tools=[_tool(APPEND_TOOL)],
    )
    text, call = reply_to(request)
    assert call is None
    assert text.startswith("I can't help with that")
