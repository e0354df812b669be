"""`handoff_to_user` (seed 001's multi-agent example): the model ends its turn with a
question for the person. The question is the turn's answer, stored as the assistant's
message (so the next turn's recent conversation holds it), the run completes with reason
`handoff`, and the conversation awaits the person's answer until their next turn ends.

Offered to an agent whose `handoff_to_user` is on, in a turn a person started: a
specialist's nested turn answers its orchestrator, which hands off itself if it must."""

from collections.abc import AsyncGenerator

from api.journal.events import RunEvent
from api.llm.types import ToolCall, ToolSpec
from api.runtime.toolbox import ToolReply, TurnTool
from api.tools.native.base import schema

NAME = "handoff_to_user"
HANDED_OFF = "Handed off: your question is your answer, and the turn ends here."
NO_QUESTION = f"Invalid arguments for {NAME}: 'question' is required (the text to ask the person)."
SPEC = ToolSpec(
    name=NAME,
    description=(
        "Ask the person a question and end your turn: use it when you cannot go on "
        "without their answer (a missing detail, a choice only they can make). The "
        "question is your reply; their next message answers it."
    ),
    parameters=schema(
        {"question": {"type": "string", "description": "What to ask, in full."}},
        ["question"],
    ),
)


class HandoffToUser(TurnTool):
    spec = SPEC

    async def stream(self, call: ToolCall) -> AsyncGenerator[RunEvent | ToolReply, None]:
        question = call.arguments.get("question")
        if not isinstance(question, str) or not question.strip():
            yield ToolReply(NO_QUESTION)
            return
        yield ToolReply(HANDED_OFF, handoff=question.strip())
