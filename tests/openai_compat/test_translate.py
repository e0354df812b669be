"""The translation on its own: steps' texts, a run that broke off, parameter names."""

from typing import Any

import pytest

from api.errors import AppError
from api.http.openai.errors import param_of
from api.http.openai.translate import Completion, Transcript, forces_a_tool
from api.journal import events


def delta(step: int, text: str) -> events.TextDelta:
    return events.TextDelta("run", step, text)


def test_steps_texts_are_joined_by_a_blank_line() -> None:
    transcript = Transcript()
    sent = [
        transcript.add(d)
        for d in (
            delta(1, ""),
            delta(1, "Let me"),
            delta(1, " note that."),
            delta(2, ""),
            delta(3, ""),
            delta(3, "Done."),
            delta(3, " Bye."),
        )
    ]
    assert sent == ["", "Let me", " note that.", "", "", "\n\nDone.", " Bye."]
    assert transcript.text == "Let me note that.\n\nDone. Bye."
    # A first step that said nothing puts no blank line before the answer.
    quiet = Transcript()
    assert [quiet.add(d) for d in (delta(2, "Hi"), delta(2, "!"))] == ["Hi", "!"]


def test_a_run_without_its_completion_is_no_answer() -> None:
    completion = Completion.of("run", 1.5, "Kit")
    found = [events.RunStarted("run", "a", "c", "actor", "s"), delta(1, "Half")]
    with pytest.raises(AppError, match="stopped before it finished"):
        completion.answer(found)
    done = completion.answer([*found, events.RunCompleted("run", 1, events.Usage(3, 2))])
    assert (done.id, done.created, done.choices[0].message.content) == ("chatcmpl-run", 1, "Half")
    assert (done.usage.prompt_tokens, done.usage.total_tokens) == (3, 5)


def test_parameters_are_named_as_openai_names_them() -> None:
    assert param_of(["messages", 0, "content", 1, "text"]) == "messages[0].content[1].text"
    assert param_of([]) is None


@pytest.mark.parametrize(
    ("choice", "forced"),
    [
        ("auto", False),
        ("none", False),
        ("required", True),
        ({"type": "function", "function": {"name": "f"}}, True),
        ({"type": "custom", "custom": {"name": "f"}}, True),
        ({"type": "allowed_tools", "allowed_tools": {"mode": "auto"}}, False),
        ({"type": "allowed_tools", "allowed_tools": {"mode": "required"}}, True),
    ],
)
def test_which_tool_choices_force_a_call(choice: str | dict[str, Any], forced: bool) -> None:
    assert forces_a_tool(choice) is forced
