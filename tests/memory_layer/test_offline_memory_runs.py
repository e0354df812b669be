"""The offline model in a memory run: deterministic, useful, and only there."""

from fastapi.testclient import TestClient

from api.llm.offline import Block, OfflineProvider, memory_plan, memory_reply
from api.llm.types import ChatMessage, ChatRequest, TextDelta, ToolCall, ToolCallEvent, ToolSpec
from api.memory.service import BlockView
from api.memory_runs import prompt
from tests.memory_layer.conftest import add, initialize, said

TOOLS = [ToolSpec(name, "", {}) for name in ("core_memory_append", "core_memory_delete")]


def view(name: str, description: str, *lines: str) -> BlockView:
    return BlockView(name, description, 5000, False, tuple(lines), 1)


BLOCKS = [
    view("human", "Information about the human user.", "Name: Sarah"),
    view("user_profile", "Information about the user, their role, and preferences."),
    view("current_project", "Details about the project."),
    view("summary", "A rolling summary of the conversation.", *(f"run {i}" for i in range(5))),
]


def request(said: list[tuple[str, str]], tools: list[ToolSpec] = TOOLS) -> ChatRequest:
    return ChatRequest(
        model="offline-demo",
        messages=[
            ChatMessage("system", prompt.system_prompt(BLOCKS)),
            ChatMessage("user", prompt.new_messages(said)),
        ],
        tools=tools,
    )


def test_a_memory_run_notes_facts_where_they_fit_and_rolls_the_summary() -> None:
    said = [
        ("user", "My name is Sarah and I live in Boston. I prefer short answers."),
        ("assistant", "Noted. Our main goal is to ship by May."),
    ]
    reply = memory_reply(request(said))
    assert reply is not None
    text, calls = reply
    assert text == ""
    assert [(c.name, dict(c.arguments)) for c in calls] == [
        # "Name: Sarah" is in human already: not again.
        ("core_memory_append", {"block": "human", "content": "Lives in: Boston"}),
        ("core_memory_append", {"block": "user_profile", "content": "Prefers: short answers"}),
        ("core_memory_append", {"block": "current_project", "content": "Goal: ship by May"}),
        ("core_memory_delete", {"block": "summary", "line_number": 1}),
        (
            "core_memory_append",
            {
                "block": "summary",
                "content": "2 messages. User: My name is Sarah and I live in Boston. I prefer "
                "short answers.",
            },
        ),
    ]
    # The same request, the same plan.
    again = memory_reply(request(said))
    assert again is not None
    assert [dict(c.arguments) for c in again[1]] == [dict(c.arguments) for c in calls]


def test_after_its_edits_it_says_what_it_did() -> None:
    base = request([("user", "I like tea")])
    messages = [
        *base.messages,
        ChatMessage("assistant", ""),
        ChatMessage("tool", 'Appended to [human] at line 2: "Likes: tea" (3/5000 words)'),
        ChatMessage("tool", "Line already exists in [summary] at line 1: x (no change)"),
    ]
    reply = memory_reply(ChatRequest(model="offline-demo", messages=messages, tools=TOOLS))
    assert reply == ("Memory updated: 1 of 2 edits changed a block.", [])


def test_small_talk_without_a_summary_block_changes_nothing() -> None:
    assert memory_plan([Block("human", "", ())], [("user", "Hello there")]) == []


async def test_ordinary_turns_are_unchanged() -> None:
    plain = ChatRequest(
        model="offline-demo",
        messages=[ChatMessage("system", "You are helpful."), ChatMessage("user", "I prefer tea")],
        tools=TOOLS,
    )
    assert memory_reply(plain) is None
    events = [e async for e in OfflineProvider().stream(plain)]
    assert not any(isinstance(e, ToolCallEvent) for e in events)  # noticed, not stored
    said = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert said.startswith("Noted (prefers: tea), for this conversation.")


async def test_the_provider_streams_every_edit_in_one_step() -> None:
    events = [e async for e in OfflineProvider().stream(request([("user", "I like tea")]))]
    calls = [e.call.name for e in events if isinstance(e, ToolCallEvent)]
    assert calls == ["core_memory_append", "core_memory_delete", "core_memory_append"]


# --- facts that stay current --------------------------------------------------------------

ALL_TOOLS = [
    ToolSpec(name, "", {})
    for name in ("core_memory_append", "core_memory_replace", "core_memory_delete")
]


def edits(plan: list[ToolCall]) -> list[tuple[str, dict[str, object]]]:
    return [(c.name, dict(c.arguments)) for c in plan]


def test_a_memory_run_replaces_a_changed_fact_instead_of_adding_one() -> None:
    blocks = [
        Block("human", "", ("Name: Alice Moreira", "Lives in: Lisbon", "Works at: Acme")),
        Block("summary", "", ()),
    ]
    said = [
        ("user", "Actually, call me Bob. I live in Porto now, not Lisbon any more."),
        ("assistant", "Got it, Bob!"),
        ("user", "I don't work at Acme any more, and I like green tea."),
    ]
    assert edits(memory_plan(blocks, said))[:4] == [
        ("core_memory_replace", {"block": "human", "line_number": 1, "new_content": "Name: Bob"}),
        (
            "core_memory_replace",
            {"block": "human", "line_number": 2, "new_content": "Lives in: Porto"},
        ),
        # Likes add up; what is no longer true goes.
        ("core_memory_append", {"block": "human", "content": "Likes: green tea"}),
        ("core_memory_delete", {"block": "human", "line_number": 3}),
    ]
    # A fact stated and corrected in one run: its line is appended, then replaced.
    fresh = [Block("human", "", ())]
    assert edits(memory_plan(fresh, [("user", "My name is Alice"), ("user", "Call me Bob")])) == [
        ("core_memory_append", {"block": "human", "content": "Name: Alice"}),
        ("core_memory_replace", {"block": "human", "line_number": 1, "new_content": "Name: Bob"}),
    ]
    # Without core_memory_replace among its tools, it appends as before.
    only_append = memory_plan(blocks[:1], [("user", "I moved to Porto")], ("core_memory_append",))
    assert edits(only_append) == [
        ("core_memory_append", {"block": "human", "content": "Lives in: Porto"})
    ]


def test_the_prompt_asks_for_replacements() -> None:
    assert "replace its line with core_memory_replace" in prompt.INSTRUCTIONS
    assert "instead of appending a second line" in prompt.INSTRUCTIONS


def test_a_memory_run_over_http_replaces_the_line_and_its_history_says_so(
    api: TestClient,
) -> None:
    agent_id = initialize(api)["agent_id"]
    for message in ("My name is Alice Moreira and I live in Lisbon", "I moved to Porto"):
        run = add(api, [said("user", message)], wait_for_completion=True)
        assert run["status"] == "completed", run
    human = api.get(f"/agents/{agent_id}/memory/blocks/human").json()
    assert human["lines"] == ["Name: Alice Moreira", "Lives in: Porto"]
    changes = api.get(f"/agents/{agent_id}/memory/blocks/human/history").json()["changes"]
    assert [(c["source"], c["action"], c["old_line"], c["new_line"]) for c in changes] == [
        ("memory_run", "replace", "Lives in: Lisbon", "Lives in: Porto"),
        ("memory_run", "append", None, "Lives in: Lisbon"),
        ("memory_run", "append", None, "Name: Alice Moreira"),
    ]
