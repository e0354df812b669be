"""The tool loop every architecture can use (seed 001's Agent): a system prompt, tools, and
the turn's injected hooks and state. It streams the LLM, runs the tools the model calls,
feeds their replies back, and adds every message through the hooks the moment it exists.
A tool may tell the client what happens while it runs (a specialist's nested turn): those
events pass through as they come. A call of `handoff_to_user` ends the turn after its step's
calls, the question its answer.

A step is one LLM call. The last allowed step offers no tools, so the model has to answer.
When the turn stops early (the client went away and the task is cancelled, or the provider
failed), what exists is still added, marked interrupted: the text and tool calls the model
had produced, and a reply for each tool call that had not answered, so the conversation
reads consistently."""

import asyncio
from collections.abc import AsyncGenerator

from api.conversations.messages.models import Message
from api.journal import events
from api.llm.types import ChatMessage, ToolCall, ToolCallEvent, ToolSpec
from api.llm.types import TextDelta as LLMText
from api.runtime.toolbox import Toolbox, ToolReply
from api.runtime.turn import Turn, tool_call_item

TOOL_INTERRUPTED = "Interrupted: the turn stopped before this tool answered."


def opening(turn: Turn, system_prompt: str) -> list[ChatMessage]:
    """The messages of the turn's first LLM call: the architecture's prompt followed by the
    hooks' sections, then the person's message. The context preview shows these."""
    return [
        ChatMessage("system", turn.system_prompt(system_prompt)),
        ChatMessage("user", turn.prompt),
    ]


def offered_at(tools: Toolbox, *, step: int, max_steps: int) -> list[ToolSpec]:
    """The tools a step offers: all of them, but none on the last, so the model answers."""
    return tools.specs if tools and step < max_steps else []


class AgentLoop:
    def __init__(self, turn: Turn, *, system_prompt: str, tools: Toolbox | None = None) -> None:
        self.turn = turn
        self.own = system_prompt
        self.tools = turn.tools if tools is None else tools

    async def stream(self) -> AsyncGenerator[events.RunEvent, None]:
        """The turn's events; the runtime has added the user's message already."""
        turn = self.turn
        run_id = turn.state.run_id
        history = opening(turn, self.own)
        for step in range(1, turn.max_steps + 1):
            last = step == turn.max_steps
            offered = offered_at(self.tools, step=step, max_steps=turn.max_steps)
            text: list[str] = []
            calls: list[ToolCall] = []
            # Its time and id are fixed now, so that its drafts and itself are one message.
            reply = turn.messages.new("assistant")
            turn.draft.follow(reply, text, calls)
            try:
                async for event in turn.llm.stream(history, offered):
                    if isinstance(event, LLMText):
                        text.append(event.text)
                        yield events.TextDelta(run_id, step, event.text)
                    elif isinstance(event, ToolCallEvent) and not last:  # none offered: ignored
                        call = event.call
                        calls.append(call)
                        yield events.ToolCalled(
                            run_id, step, call.id, call.name, dict(call.arguments)
                        )
            except BaseException:
                turn.draft.stop()
                if text or calls:  # what the model produced before it stopped
                    partial = _with(reply, text, calls, interrupted=True)
                    await turn.hooks.message_added(partial)
                    await self._interrupt(calls)
                raise
            turn.draft.stop()
            reply = _with(reply, text, calls)
            pending = list(calls)
            written = False
            try:
                await turn.hooks.message_added(reply, ends_turn=not calls)
                written = True
                history.append(ChatMessage("assistant", reply.content, tool_calls=tuple(calls)))
                if not calls:
                    yield events.FinalMessage(
                        run_id,
                        reply.message_id,
                        reply.role,
                        reply.content,
                        reply.created_at.isoformat(),
                    )
                    return
                question: str | None = None  # handoff_to_user's, once called
                for call in calls:
                    answer = ToolReply("")
                    async for told in self.tools.stream(call):
                        if isinstance(told, ToolReply):
                            answer = told
                        else:
                            yield told
                    pending.remove(call)
                    await turn.hooks.message_added(
                        turn.messages.new("tool", answer.text, tool_call_id=call.id)
                    )
                    history.append(ChatMessage("tool", answer.text, tool_call_id=call.id))
                    yield events.ToolAnswered(run_id, step, call.id, call.name, answer.text)
                    question = question or answer.handoff
                if question is not None:
                    yield await self._hand_off(question)
                    return
            except BaseException as e:
                # A cancelled write still finishes (see Hooks.message_added): the reply is
                # stored, so its calls need their replies.
                if written or isinstance(e, asyncio.CancelledError):
                    await self._interrupt(pending)
                raise

    async def _hand_off(self, question: str) -> events.FinalMessage:
        """The turn ends with the question for the person as its answer (handoff_to_user):
        the other calls of the step have answered; no further step is taken."""
        turn = self.turn
        asked = turn.messages.new("assistant", question)
        await turn.hooks.message_added(asked, ends_turn=True)
        turn.ended_by = "handoff"
        return events.FinalMessage(
            turn.state.run_id,
            asked.message_id,
            asked.role,
            asked.content,
            asked.created_at.isoformat(),
        )

    async def _interrupt(self, calls: list[ToolCall]) -> None:
        """A reply for each call that will not get one, so every call has its result."""
        for call in calls:
            await self.turn.hooks.message_added(
                self.turn.messages.new(
                    "tool", TOOL_INTERRUPTED, tool_call_id=call.id, interrupted=True
                )
            )


def _with(reply: Message, text: list[str], calls: list[ToolCall], **changes: bool) -> Message:
    return reply.model_copy(
        update={
            "content": "".join(text),
            "tool_calls": [tool_call_item(c) for c in calls],
            **changes,
        }
    )
