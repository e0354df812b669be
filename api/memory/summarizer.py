"""What rewrites a full block shorter during compaction: the agent's LLM in production, a
deterministic rule offline and in tests. The service archives every line the rewrite drops
before it saves the rewrite, and falls back to the rule when a summary is no shorter."""

import re
from collections.abc import Sequence
from typing import Protocol

from api.llm.types import ChatMessage, ChatRequest, GenerationParams, LLMProvider, TextDelta
from api.memory import blocks
from api.observability import llm as observed_llm

TARGET_PERCENT = 50  # compaction aims at half the limit, well clear of the warning


class Summarizer(Protocol):
    async def summarize(self, block: str, lines: Sequence[str], word_limit: int) -> list[str]:
        """Shorter lines for the block, ideally under TARGET_PERCENT of `word_limit`."""
        ...


def target_words(word_limit: int) -> int:
    return word_limit * TARGET_PERCENT // 100


def summary_line(moved: int) -> str:
    return f"Moved {moved} older {'line' if moved == 1 else 'lines'} to archival memory"


class TruncatingSummarizer:
    """Keeps the newest lines that fit under half the limit, behind one line saying how
    many older lines went to archival memory. The newest facts are the likeliest to matter
    and nothing is paraphrased, so nothing can be misremembered."""

    async def summarize(self, block: str, lines: Sequence[str], word_limit: int) -> list[str]:
        budget = target_words(word_limit)
        note_words = blocks.count_words([summary_line(len(lines))])
        with_note = note_words < budget  # a tiny limit has no room for the note
        room = budget - note_words if with_note else budget
        kept: list[str] = []
        used = 0
        for line in reversed(lines):
            used += blocks.count_words([line])
            if used > room:
                break
            kept.insert(0, line)
        moved = len(lines) - len(kept)
        if moved == 0:
            return list(lines)
        return [summary_line(moved), *kept] if with_note else kept


_NUMBERING = re.compile(r"^\s*(?:\d+[:.)]|[-*•])\s*")

PROMPT = """You maintain the [{block}] block of an AI agent's core memory: one fact per line.
It holds {words} words and its limit is {limit}. Rewrite it in at most {target} words:
merge related facts, drop what is stale, keep what matters most. The original lines are
kept in archival memory, so nothing is lost. Reply with the new lines only, one per line,
no numbering and no commentary.

{lines}"""


class LLMSummarizer:
    """The agent's own model rewrites the block. Its failures propagate: the service then
    falls back to the deterministic rule."""

    def __init__(self, provider: LLMProvider, model: str) -> None:
        self._provider = provider
        self._model = model

    async def summarize(self, block: str, lines: Sequence[str], word_limit: int) -> list[str]:
        target = target_words(word_limit)
        prompt = PROMPT.format(
            block=block,
            words=blocks.count_words(lines),
            limit=word_limit,
            target=target,
            lines="\n".join(lines),
        )
        request = ChatRequest(
            model=self._model,
            messages=[ChatMessage(role="user", content=prompt)],
            params=GenerationParams(max_tokens=2 * target + 256, temperature=0.0),
        )
        text = "".join(
            [
                e.text
                async for e in observed_llm.observed(self._provider, request)
                if isinstance(e, TextDelta)
            ]
        )
        cleaned = (blocks.clean_line(_NUMBERING.sub("", raw)) for raw in text.splitlines())
        return [line for line in cleaned if line]


def summarizer_for(provider: LLMProvider, model: str) -> Summarizer:
    """The agent's model, except the offline demo model, which cannot summarize."""
    if provider.name == "offline":
        return TruncatingSummarizer()
    return LLMSummarizer(provider, model)
