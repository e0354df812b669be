"""PLUG-IN POINT: what an agent architecture is.

An architecture decides how its agent thinks: its system prompt, which native tools it
offers, and how a turn runs. The runtime gives it a `Turn` (the LLM, the tools, the hooks
and state, what was read) and relays the events it yields. It never sets up storage,
memory or hooks itself: a new architecture is a new file and one registration line.
"""

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Sequence
from typing import ClassVar

from api.journal.events import RunEvent
from api.memory.service import BlockView
from api.runtime.turn import Turn


class AgentArchitecture(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    tools: ClassVar[tuple[str, ...]] = ()  # native tools, by name, offered to the model
    # Core memory is in its prompt, so the runtime's upkeep after a turn applies: it counts
    # the turns a full block was warned of and compacts the block after the third.
    shows_core_memory: ClassVar[bool] = True

    def blocks_shown(self, turn: Turn) -> Sequence[BlockView]:
        """The core memory blocks its prompt holds: what the turn's record of what it used
        names (docs/sse.md, `context.used`)."""
        return turn.core_memory if self.shows_core_memory else ()

    def system_prompt(self, turn: Turn) -> str | None:
        """Its own prompt for `turn` (the hooks' sections follow it), as its `run` sends it:
        what the context preview shows. None, the default, for one whose prompt is known only
        once it runs; the preview then says it cannot show it."""
        return None

    @abstractmethod
    def run(self, turn: Turn) -> AsyncGenerator[RunEvent, None]:
        """One turn, as events: text deltas, tool calls and results, the final message."""
        ...
