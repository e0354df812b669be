"""The rules of core-memory blocks, free of storage: names, default blocks, lines, words,
capacity, and how blocks read in the system prompt."""

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

WARNING_PERCENT = 80
MAX_WORD_LIMIT = 20_000
MAX_BLOCK_NAME = 64
MAX_LINE_CHARS = 2_000  # one fact per line; long details belong in archival memory
MAX_BLOCK_CHARS = 100_000  # word limits do not bound characters; items stop at 400 KB


@dataclass(frozen=True)
class DefaultBlock:
    name: str
    description: str


DEFAULT_BLOCKS = (
    DefaultBlock("human", "Facts about the user"),
    DefaultBlock("persona", "Your traits and characteristics"),
)

# Models echo the prompt's heading "[Human - Facts about the user]": what follows a spaced
# dash is the description, not the name.
_DESCRIPTION = re.compile(r"\s+[-\u2013\u2014]\s+.*$", re.S)
_NOT_NAME = re.compile(r"[^a-z0-9]+")


def normalize_block_name(name: str) -> str:
    """The stored name for what a model or a person typed; "" when nothing usable is left.

    "Human - Facts about the user" -> "human", "Important_Financial_Data" ->
    "important_financial_data", "My Custom Block" -> "my_custom_block".
    """
    bare = _DESCRIPTION.sub("", name.strip().strip("[]").strip())
    return _NOT_NAME.sub("_", bare.lower()).strip("_")


def is_valid_block_name(name: str) -> bool:
    return 0 < len(name) <= MAX_BLOCK_NAME and name == normalize_block_name(name)


def clean_line(text: str) -> str:
    """A line as stored: one line, single spaces. Whitespace never makes two facts differ,
    and a newline inside a line would shift every line number after it."""
    return " ".join(text.split())


def count_words(lines: Iterable[str]) -> int:
    return sum(len(line.split()) for line in lines)


def count_chars(lines: Iterable[str]) -> int:
    return sum(len(line) for line in lines)


def percent_used(words: int, word_limit: int) -> int:
    return words * 100 // word_limit


def needs_warning(words: int, word_limit: int) -> bool:
    # Integer arithmetic: 4000/5000 is exactly 80%, whatever floats think.
    return words * 100 >= word_limit * WARNING_PERCENT


def char_percent_used(chars: int, char_limit: int | None) -> int:
    return chars * 100 // char_limit if char_limit else 0


def needs_char_warning(chars: int, char_limit: int | None) -> bool:
    """Seed 004's character limit warns at the same 80% as the word limit."""
    return char_limit is not None and chars * 100 >= char_limit * WARNING_PERCENT


def title(name: str) -> str:
    """The heading form of a block name, which normalizes back to the name."""
    return name.replace("_", " ").title()


def render_block(name: str, description: str, lines: Sequence[str]) -> str:
    heading = f"[{title(name)} - {description}]" if description else f"[{title(name)}]"
    return "\n".join([heading, *(f"{i}: {line}" for i, line in enumerate(lines, 1))])


def render_core_memory(blocks: Sequence[tuple[str, str, Sequence[str]]]) -> str:
    """Seed 000's system-prompt section: each (name, description, lines), numbered lines."""
    body = "\n\n".join(render_block(name, desc, lines) for name, desc, lines in blocks)
    return f"<core_memory>\n{body}\n</core_memory>"
