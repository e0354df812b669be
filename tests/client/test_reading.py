"""Seed 002's context formatting, and the reading of requests and stream items, on plain data."""

from typing import Any

import pytest

from client.apis import ANTHROPIC, CHAT, RESPONSES, Prompt, Reply
from client.formatting import format_context
from client.streams import Observer


def message(role: str, content: str, at: str) -> dict[str, Any]:
    return {"role": role, "content": content, "created_at": at, "similarity": 0.5}


def test_the_seeds_format_blocks_then_conversations_in_the_order_said() -> None:
    context = {
        "memory_blocks": [
            {"label": "human", "value": "Name: Alice\nLocation: Boston"},
            {"label": "persona", "value": "I am a helpful assistant."},
            {"label": "empty", "value": "  "},
        ],
        "relevant_messages": [
            message("assistant", "Nice to meet you, Alice!", "2024-01-15T10:30:01Z"),
            message("user", "My name is Alice and I live in Boston.", "2024-01-15T10:30:00Z"),
        ],
    }
    assert format_context(context) == (
        "The following is context from your memory:\n\n"
        "## Memory\n\n### human\nName: Alice\nLocation: Boston\n\n"
        "### persona\nI am a helpful assistant.\n\n"
        "## Relevant Past Conversations\n\n"
        "**User**: My name is Alice and I live in Boston.\n\n"
        "**Assistant**: Nice to meet you, Alice!"
    )


def test_messages_are_cut_past_500_characters() -> None:
    long = "x" * 499 + "yz"
    text = format_context({"memory_blocks": [], "relevant_messages": [message("user", long, "t")]})
    assert text is not None
    assert text.endswith("**User**: " + "x" * 499 + "y…")
    exact = "x" * 500
    text = format_context({"relevant_messages": [message("user", exact, "t")]})
    assert text is not None
    assert text.endswith(exact)


def test_nothing_to_say_injects_nothing() -> None:
    assert format_context({"memory_blocks": [], "relevant_messages": []}) is None
    assert format_context({"memory_blocks": [{"label": "human", "value": ""}]}) is None
    assert format_context({}) is None


@pytest.mark.parametrize("leading", ["system", "developer"])
def test_chat_memory_goes_after_a_leading_instruction(leading: str) -> None:
    kwargs = {"messages": [{"role": leading, "content": "S"}, {"role": "user", "content": "Q"}]}
    injected = CHAT.inject(kwargs, "MEMORY")
    assert [m["role"] for m in injected["messages"]] == [leading, "system", "user"]
    assert injected["messages"][1]["content"] == "MEMORY"
    assert len(kwargs["messages"]) == 2  # the caller's list is left as it was


def test_chat_memory_is_prepended_without_a_leading_instruction() -> None:
    kwargs = {"messages": [{"role": "user", "content": "Q"}, {"role": "system", "content": "S"}]}
    assert CHAT.inject(kwargs, "M")["messages"][0] == {"role": "system", "content": "M"}


def test_the_prompt_is_the_last_user_message_and_is_stored_only_when_it_ends_the_request() -> None:
    asked = {"messages": [{"role": "user", "content": "First"}, {"role": "user", "content": "Q"}]}
    assert CHAT.prompt(asked) == Prompt(query="Q", user="Q")
    looped = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Q"}]},
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "tool", "tool_call_id": "c", "content": "result"},
        ]
    }
    assert CHAT.prompt(looped) == Prompt(query="Q", user=None)
    assert CHAT.prompt({"messages": [{"role": "system", "content": "S"}]}) == Prompt("", None)


def test_responses_read_strings_and_input_text_parts() -> None:
    assert RESPONSES.prompt({"input": "  Hello  "}) == Prompt(query="Hello", user="Hello")
    given = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "A"}]},
        {"type": "function_call_output", "call_id": "c", "output": "42"},
    ]
    assert RESPONSES.prompt({"input": given}) == Prompt(query="A", user=None)
    assert RESPONSES.inject({"input": "x"}, "M")["instructions"] == "M"


def test_anthropic_text_blocks_and_a_tool_result_turn() -> None:
    kwargs = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Look"}, {"type": "image"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
        ]
    }
    assert ANTHROPIC.prompt(kwargs) == Prompt(query="Look", user=None)
    assert ANTHROPIC.inject({"system": "S"}, "M")["system"] == "S\n\nM"
    assert ANTHROPIC.inject({}, "M")["system"] == "M"


def test_a_stream_item_that_cannot_be_read_is_reported_once_as_an_error() -> None:
    reports: list[tuple[Reply | None, bool, str | None]] = []
    observer = Observer(CHAT.accumulator(), lambda _, *report: reports.append(report))
    observer.item({"choices": [{"index": 0, "delta": {"content": "Hel"}}]})
    observer.item({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "x"}]}}]})
    observer.item({"choices": [{"index": 0, "delta": {"content": "lo"}}]})
    observer.end(closed_early=False)
    observer.end(closed_early=True)

    ((reply, interrupted, error),) = reports
    assert reply is None
    assert interrupted is False
    assert error is not None
    assert "could not be read" in error


def test_a_stream_closed_after_its_finish_is_whole_and_before_it_is_interrupted() -> None:
    reports: list[tuple[Reply | None, bool, str | None]] = []
    for finish in ("stop", None):
        observer = Observer(CHAT.accumulator(), lambda _, *report: reports.append(report))
        observer.item({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})
        observer.item({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        observer.end(closed_early=True)
    assert [(r.text if r else None, interrupted) for r, interrupted, _ in reports] == [
        ("Hi", False),
        ("Hi", True),
    ]
