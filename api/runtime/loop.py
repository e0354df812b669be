"""The tool loop every architecture can use (seed 001's Agent): a system prompt, tools, and
the turn's injected hooks and state. It streams the LLM, runs the tools the model calls,
feeds their replies back, and adds every message through the hooks the moment it exists.

A step is one LLM call. The last allowed step offers no tools, so the model has to answer.
If the client goes away (the task is cancelled) or the provider fails, the text produced
so far is added as an interrupted assistant message before the error goes on."""

import asyncio
from collections.abc import AsyncIterator

from api.llm.errors import ProviderError
from api.llm.types import ChatMessage, ToolCall, ToolCallEvent
from api.llm.types import TextDelta as LLMText
from api.runtime import events
from api.runtime.toolbox import Toolbox
from api.runtime.turn import Turn


class AgentLoop:
    def __init__(self, turn: Turn, *, system_prompt: str, tools: Toolbox | None = None) -> None:
        self.turn = turn
        self.system_prompt = turn.system_prompt(system_prompt)
        self.tools = turn.tools if tools is None else tools

    async def stream(self) -> AsyncIterator[events.RunEvent]:
        turn = self.turn
        run_id = turn.state.run_id
        await turn.hooks.message_added(turn.messages.new("user", turn.prompt))
        history = [ChatMessage("system", self.system_prompt), ChatMessage("user", turn.prompt)]
        for step in range(1, turn.max_steps + 1):
            offered = self.tools.specs if self.tools and step < turn.max_steps else []
            text: list[str] = []
            calls: list[ToolCall] = []
            try:
                async for event in turn.llm.stream(history, offered):
                    if isinstance(event, LLMText):
                        text.append(event.text)
                        yield events.TextDelta(run_id, step, event.text)
                    elif isinstance(event, ToolCallEvent):
                        calls.append(event.call)
                        call = event.call
                        yield events.ToolCalled(
                            run_id, step, call.id, call.name, dict(call.arguments)
                        )
            except (asyncio.CancelledError, ProviderError):
                if text:  # what the model said before it stopped
                    await turn.hooks.message_added(
                        turn.messages.new("assistant", "".join(text), interrupted=True)
                    )
                raise
            reply = turn.messages.new("assistant", "".join(text), tool_calls=calls)
            await turn.hooks.message_added(reply)
            history.append(ChatMessage("assistant", reply.content, tool_calls=tuple(calls)))
            if not calls or step == turn.max_steps:  # tools offered at none: never run
                yield events.FinalMessage(
                    run_id,
                    reply.message_id,
                    reply.role,
                    reply.content,
                    reply.created_at.isoformat(),
                )
                return
            for call in calls:
                answer = await self.tools.run(call)
                await turn.hooks.message_added(
                    turn.messages.new("tool", answer, tool_call_id=call.id)
                )
                history.append(ChatMessage("tool", answer, tool_call_id=call.id))
                yield events.ToolAnswered(run_id, step, call.id, call.name, answer)
