"""What a turn used, noted as it happens: the memories and past messages that entered its
context (the hooks' before its first LLM call, its search tools' as they answer) and the
core memory blocks its prompt held. The run's `context.used` event carries it, and its end
stores it with the run (docs/sse.md)."""

from collections.abc import Iterable

from api.journal.models import Source, SourceBlock, Sources

# Kept per turn: a run item stays small whatever a turn searches (a source's preview is at
# most PREVIEW_CHARS), and a person reads a list this long at most.
MAX_SOURCES = 50
PREVIEW_CHARS = 80
SCORE_DIGITS = 6  # significant digits of a score: enough to compare, short to store


def preview(text: str) -> str:
    """The start of `text` on one line, cut at a word."""
    line = " ".join(text.split())
    if len(line) <= PREVIEW_CHARS:
        return line
    cut = line[: PREVIEW_CHARS - 1].rsplit(" ", 1)[0] or line[: PREVIEW_CHARS - 1]
    return cut + "…"


def score(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.{SCORE_DIGITS}g}")


class UsedSources:
    """One turn's sources. A memory or message seen again (two searches finding it) keeps
    its first entry: what matters is that it was used, and how it came in first."""

    def __init__(self) -> None:
        self._items: list[Source] = []
        self._seen: set[tuple[str, str]] = set()
        self._left_out = 0
        self._blocks: list[SourceBlock] = []

    def add(self, sources: Iterable[Source]) -> None:
        for source in sources:
            key = (source.kind, source.id)
            if key in self._seen:
                continue
            self._seen.add(key)
            if len(self._items) < MAX_SOURCES:
                self._items.append(source)
            else:
                self._left_out += 1

    def held(self, blocks: Iterable[SourceBlock]) -> None:
        """The blocks the turn's prompt held (said once, when the prompt is made)."""
        self._blocks = list(blocks)

    def record(self) -> Sources:
        return Sources(items=list(self._items), blocks=list(self._blocks), left_out=self._left_out)
