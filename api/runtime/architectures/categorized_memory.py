"""categorized-memory (seed 003): the model sees seed 003's prompt and three tools, and
keeps its long-term memories itself, each a fact, a pattern, a preference or a capability.

What the model sees is what seed 003 shows, no more: its system prompt and the three tools
(`store_memory`, `search_memories`, `list_memories`), nothing of the backend. There is no
`<core_memory>` in the prompt and no block tool: the memories are the agent's archival
memories, with their category, context and confidence, searched through the one search
engine. Two things follow the seed's sentence when they exist: the agent's persona (the
lines of its `persona` block, which `POST /agents` and `PATCH /agents/{id}` write), and what
the runtime's hooks add (seed 001's recent conversation), as for every architecture.
"""

from collections.abc import AsyncGenerator, Sequence

from api.journal.events import RunEvent
from api.memory.service import BlockView
from api.runtime.architectures.base import AgentArchitecture
from api.runtime.loop import AgentLoop
from api.runtime.turn import Turn
from api.tools.native import CATEGORIZED_MEMORY_TOOLS

INSTRUCTIONS = (
    "You are a helpful assistant with memory capabilities. You can store and retrieve "
    "information using the available tools."
)
PERSONA_BLOCK = "persona"


class CategorizedMemory(AgentArchitecture):
    name = "categorized-memory"
    description = (
        "Seed 003's categorized memory: the model stores facts, patterns, preferences and "
        "capabilities, searches them and lists them by category (3 tools); no core memory "
        "in the prompt."
    )
    tools = tuple(CATEGORIZED_MEMORY_TOOLS)
    shows_core_memory = False

    def system_prompt(self, turn: Turn) -> str:
        persona = [line for view in self.blocks_shown(turn) for line in view.lines]
        return "\n\n".join([INSTRUCTIONS, "\n".join(persona)] if persona else [INSTRUCTIONS])

    def blocks_shown(self, turn: Turn) -> Sequence[BlockView]:
        """The persona block, when it has lines: the one block its prompt shows."""
        return [view for view in turn.core_memory if view.name == PERSONA_BLOCK and view.lines]

    def run(self, turn: Turn) -> AsyncGenerator[RunEvent, None]:
        return AgentLoop(turn, system_prompt=self.system_prompt(turn)).stream()
