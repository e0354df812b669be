"""krishna-memgpt (seed 000): core memory blocks in the system prompt, edited by the model
with five tools, and archival memory it searches with two more."""

from collections.abc import AsyncGenerator, Sequence

from api.agents.models import DEFAULT_ARCHITECTURE
from api.journal.events import RunEvent
from api.memory import blocks
from api.memory.service import BlockView
from api.runtime.architectures.base import AgentArchitecture
from api.runtime.loop import AgentLoop
from api.runtime.turn import Turn
from api.tools.native import NATIVE_MEMORY_TOOLS
from api.tools.native.core_memory import capacity_warning

INSTRUCTIONS = """You are {name}, an AI agent with long-term memory.

Your core memory is below, in blocks of numbered lines; it is all you remember of past
conversations besides your archival memory. Keep it current with your tools:
core_memory_append to add a fact (one fact per line), core_memory_replace and
core_memory_delete to correct or remove a line by its number, core_memory_read and
core_memory_list_blocks to look. Store details that do not belong in core memory with
archival_memory_insert and find them again with archival_memory_search.
When a block is near its limit, consolidate its lines or move details to archival memory."""


def render_memory(views: Sequence[BlockView]) -> str:
    """Seed 000's `<core_memory>` section, then a warning for each block at 80% or more:
    the model is told in every turn, so a warned turn always reached it."""
    rendered = blocks.render_core_memory([(v.name, v.description, v.lines) for v in views])
    warnings = [capacity_warning(v) for v in views if v.needs_warning]
    return "\n\n".join([rendered, *warnings])


class KrishnaMemGPT(AgentArchitecture):
    name = DEFAULT_ARCHITECTURE
    description = (
        "MemGPT-style memory: core memory blocks in the prompt, edited with 5 tools, and "
        "archival memory searched with 2 more."
    )
    tools = tuple(NATIVE_MEMORY_TOOLS)

    def system_prompt(self, turn: Turn) -> str:
        # The persona lives in the persona block, which the model can edit.
        instructions = INSTRUCTIONS.format(name=turn.agent.agent_name)
        return f"{instructions}\n\n{render_memory(turn.core_memory)}"

    def run(self, turn: Turn) -> AsyncGenerator[RunEvent, None]:
        return AgentLoop(turn, system_prompt=self.system_prompt(turn)).stream()
