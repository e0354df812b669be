"""How archival search orders memories: behind a small port, so semantic search can replace
the lexical scorer without touching the service or the tools."""

import asyncio
import re
from collections.abc import Sequence
from typing import Protocol

from api.memory.models import ArchivalMemory

_WORD = re.compile(r"\w+")
# Words that would make nearly every memory match a question ("what does John drink").
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


class Ranker(Protocol):
    async def rank(self, query: str, memories: Sequence[ArchivalMemory]) -> list[ArchivalMemory]:
        """The memories that match `query`, best first. Equally good matches keep the order
        they were given in (the service gives them newest first)."""
        ...


def _best_first(wanted: set[str], memories: Sequence[ArchivalMemory]) -> list[ArchivalMemory]:
    scored = [(len(wanted & terms(m.content)), m) for m in memories]
    # sorted() is stable: ties keep the given order.
    return [m for score, m in sorted(scored, key=lambda pair: -pair[0]) if score > 0]


def _stem(word: str) -> str:
    # Just enough for plurals to meet their singular: "cups" finds "cup", "dress" stays.
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def terms(text: str) -> set[str]:
    return {_stem(word) for word in _WORD.findall(text.lower())}


class LexicalRanker:
    """Scores a memory by how many distinct query terms it contains. Plain overlap, not
    BM25: with one-word queries, the common case, every match ties and recency decides,
    which is what a person expects of their own notes."""

    async def rank(self, query: str, memories: Sequence[ArchivalMemory]) -> list[ArchivalMemory]:
        wanted = terms(query)
        wanted = (wanted - STOP_WORDS) or wanted
        if not wanted:
            return []
        # Thousands of memories are scored in a worker thread, never on the event loop.
        return await asyncio.to_thread(_best_first, wanted, memories)
