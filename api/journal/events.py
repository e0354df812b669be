"""What a run tells its client, one event at a time. `docs/sse.md` documents each event and
its fields; the SSE event name is `EVENT`, the data is `data()` as JSON."""

from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any, ClassVar

from api.journal.models import Source, SourceBlock, Sources
from api.kit import json_text

_JSON = "_json"  # where an event keeps its JSON once made


@dataclass(frozen=True)
class RunEvent:
    EVENT: ClassVar[str]
    run_id: str

    def data(self) -> dict[str, Any]:
        # Shallow, by hand: `asdict` deep-copies and costs more than the rest of an event.
        return {
            name: asdict(value) if is_dataclass(value) and not isinstance(value, type) else value
            for name, value in vars(self).items()
            if name != _JSON
        }

    def json(self) -> str:
        """The data as sent and as kept in the run's journal: made once (the journal and
        the stream both ask), kept beside the fields the way `functools.cached_property`
        keeps a value, which a frozen dataclass allows."""
        made: str | None = self.__dict__.get(_JSON)
        if made is None:
            made = self.__dict__[_JSON] = json_text.dumps(self.data())
        return made


@dataclass(frozen=True)
class RunStarted(RunEvent):
    EVENT = "run.started"
    agent_id: str
    conversation_id: str
    actor_id: str
    session_id: str


@dataclass(frozen=True)
class TextDelta(RunEvent):
    EVENT = "text.delta"
    step: int
    text: str


@dataclass(frozen=True)
class ToolCalled(RunEvent):
    EVENT = "tool.call"
    step: int
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolAnswered(RunEvent):
    EVENT = "tool.result"
    step: int
    call_id: str
    name: str
    content: str


@dataclass(frozen=True)
class MemoryWarning(RunEvent):
    EVENT = "memory.warning"
    block: str
    percent_used: int
    word_count: int
    word_limit: int
    warned_turns: int  # turns that ended with the block at or above 80%
    compacts_after: int  # the warned turn at which the block is compacted


@dataclass(frozen=True)
class MemoryCompacted(RunEvent):
    EVENT = "memory.compacted"
    block: str
    archived_lines: int
    words_before: int
    words_after: int


@dataclass(frozen=True)
class FinalMessage(RunEvent):
    EVENT = "message"
    message_id: str
    role: str
    content: str
    created_at: str
    interrupted: bool = False


@dataclass(frozen=True)
class ContextUsed(RunEvent):
    """What the turn's answer used: the archival memories and past messages that entered
    its context, and the core memory blocks its prompt held (api/journal/sources.py)."""

    EVENT = "context.used"
    items: list[Source]
    blocks: list[SourceBlock]
    left_out: int  # sources past the first 50, not listed

    @classmethod
    def of(cls, run_id: str, sources: Sources) -> "ContextUsed":
        return cls(run_id, sources.items, sources.blocks, sources.left_out)

    def data(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "items": [item.model_dump(mode="json") for item in self.items],
            "blocks": [block.model_dump(mode="json") for block in self.blocks],
            "left_out": self.left_out,
        }


@dataclass(frozen=True)
class Nested(RunEvent):
    """An event of a specialist's turn, which one of this turn's tool calls (`call_id`) is
    running: its name (`event`) and data (`payload`) as the specialist's own run tells
    them, `agent_id` the specialist, `depth` 1 for a specialist of this turn's agent, 2 for
    one of theirs..."""

    EVENT = "nested"
    agent_id: str
    depth: int
    call_id: str
    event: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class RunError(RunEvent):
    EVENT = "error"
    code: str
    message: str


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class RunCompleted(RunEvent):
    EVENT = "run.completed"
    steps: int
    usage: Usage = field(default_factory=Usage)
    # How the turn ended: "answer" (the model answered), or "handoff" (it asked the person
    # a question with handoff_to_user: the conversation awaits their answer).
    reason: str = "answer"


@dataclass(frozen=True)
class RunFailed(RunEvent):
    EVENT = "run.failed"
    code: str


INTERRUPTED = "interrupted"


def interrupted(run_id: str) -> list[RunEvent]:
    """How a run that stopped before it finished ends (its client left and nobody took it
    up, or its process stopped)."""
    return [
        RunError(run_id, INTERRUPTED, "The turn stopped before it finished."),
        RunFailed(run_id, INTERRUPTED),
    ]
