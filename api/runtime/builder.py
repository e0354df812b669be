"""One way to put a turn together (the model it calls, the tools and what they act on, the
messages it makes), for the runtime's chat turns and seed 004's memory runs alike, so that
both number their messages on one clock and give their tools the same context."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from api.agents.models import Agent
from api.journal.sources import UsedSources
from api.llm.types import LLMProvider
from api.memory.models import ChangeSource
from api.memory.service import BlockView
from api.memory.summarizer import summarizer_for
from api.repositories import Repositories
from api.runtime.hooks import Hooks
from api.runtime.state import TurnState
from api.runtime.toolbox import Toolbox, TurnTool
from api.runtime.turn import MessageClock, MessageFactory, Turn, TurnLLM
from api.search.engine import SearchEngine
from api.tools.native import NativeTool, ToolContext


@dataclass(frozen=True)
class TurnBuilder:
    """One per app (api/main.py): the repositories and the search engine the tools act
    through, the clock that orders every message this process stores, and the step limit of
    a turn."""

    repos: Repositories
    search: SearchEngine
    message_clock: MessageClock
    max_steps: int

    def build(
        self,
        agent: Agent,
        provider: LLMProvider,
        state: TurnState,
        *,
        prompt: str,
        tools: Sequence[NativeTool],
        hooks: Hooks,
        turn_tools: Sequence[TurnTool] = (),
        core_memory: Sequence[BlockView],
        source: ChangeSource,
        context: Sequence[str] = (),
        core_memory_warnings: Mapping[str, int] | None = None,
        expiry_days: int = 0,
        coalesce_seconds: float = 0.0,
    ) -> Turn:
        """The turn of `agent` on `provider`; its tools' context is `turn.tools.context`."""
        used = UsedSources()  # its search tools note what they give the model
        tool_context = ToolContext(
            self.repos,
            self.search,
            agent.agent_id,
            summarizer_for(provider, agent.agent_model),
            source=source,
            auto_supersede=agent.auto_supersede,
            used=used,
            run_id=state.run_id if source == "tool" else None,
        )
        return Turn(
            agent=agent,
            prompt=prompt,
            llm=TurnLLM(provider, agent.agent_model, coalesce_seconds=coalesce_seconds),
            tools=Toolbox(tool_context, tools, turn_tools),
            hooks=hooks,
            state=state,
            core_memory=core_memory,
            context=context,
            messages=MessageFactory(self.message_clock, state, expiry_days),
            max_steps=self.max_steps,
            core_memory_warnings=core_memory_warnings,
            used=used,
        )
