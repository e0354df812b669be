"""What a native tool is: the spec the model sees and an executor that always answers with
text. Refusals (an unknown block, a bad line number, empty content) become replies the
model can act on; only real failures (the store down) propagate to the runtime."""

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from api.journal import sources
from api.journal.models import Source
from api.journal.sources import UsedSources
from api.kit.clock import Clock
from api.llm.types import ToolSpec
from api.memory.archival import Match
from api.memory.errors import MemoryRefused
from api.memory.models import ArchivalMemory, ChangeSource
from api.memory.summarizer import Summarizer
from api.repositories import Repositories
from api.search.engine import SearchEngine

Arguments = Mapping[str, Any]


@dataclass(frozen=True)
class ToolContext:
    """Everything a tool needs, for one agent the runtime has already authorized."""

    repos: Repositories
    search: SearchEngine  # archival memory is written and searched through it
    agent_id: str
    summarizer: Summarizer
    # Who is calling, as a block's line history records it: a model in a turn, a client
    # over MCP, or a seed 004 memory run.
    source: ChangeSource = "tool"
    # The agent's `auto_supersede`: whether a new archival memory replaces the current one
    # stating the same fact.
    auto_supersede: bool = True
    # A turn's note of what entered its context: the memories a search tool gives its
    # model go there. None outside a turn (MCP).
    used: UsedSources | None = None
    # The turn whose model calls the tools, for a block's line history. None outside a turn.
    run_id: str | None = None

    @property
    def clock(self) -> Clock:
        return self.search.clock

    def note(self, found: Sequence[Source]) -> None:
        if self.used is not None:
            self.used.add(found)


Executor = Callable[[ToolContext, Arguments], Awaitable[str]]


class BadArguments(Exception):
    """The model called a tool with arguments that do not fit its schema."""


@dataclass(frozen=True)
class NativeTool:
    spec: ToolSpec
    run: Executor
    # Whether a call may change core memory: a turn that made none reuses, after it, the
    # blocks it read before it (api/runtime/runner.py's memory upkeep).
    changes_core_memory: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    async def execute(self, context: ToolContext, arguments: Arguments) -> str:
        try:
            return await self.run(context, arguments)
        except BadArguments as e:
            return f"Invalid arguments for {self.name}: {e}"
        except MemoryRefused as e:
            return e.message


def searched_sources(via: str, matches: Sequence[Match]) -> list[Source]:
    """Archival memories a search gave the model, with their scores, as a turn notes them."""
    return [
        Source(
            kind="archival",
            id=m.memory.memory_id,
            via=via,
            score=sources.score(m.score),
            similarity=sources.score(m.similarity),
            preview=sources.preview(m.memory.content),
        )
        for m in matches
    ]


def listed_sources(via: str, memories: Sequence[ArchivalMemory]) -> list[Source]:
    """Archival memories a listing gave the model (no score: they came by time)."""
    return [
        Source(kind="archival", id=m.memory_id, via=via, preview=sources.preview(m.content))
        for m in memories
    ]


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def text_arg(arguments: Arguments, name: str) -> str:
    """A string argument; empty is allowed here so the service can say what it means."""
    value = arguments.get(name)
    if value is None:
        raise BadArguments(f"'{name}' is required (a string).")
    if not isinstance(value, str):
        raise BadArguments(f"'{name}' must be a string.")
    return value


def int_arg(arguments: Arguments, name: str, *, default: int | None = None) -> int:
    """A whole number. Models sometimes send "2" or 2.0 for 2; those mean 2."""
    value = arguments.get(name)
    if value is None and default is not None:
        return default
    if isinstance(value, bool):
        value = None  # True is not line 1
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
        value = int(value.strip())
    if not isinstance(value, int):
        raise BadArguments(f"'{name}' is required (a whole number).")
    return value
