"""Names people give things (agents, conversations, blocks, metadata keys) end up in
prompts, logs and other people's screens: no control characters, no invisible formatting
(bidi overrides that reverse what a reader sees, zero-width characters), and something
visible in them. Contents (a block's lines, a message) are not names and keep newlines."""

import sys
import unicodedata
from functools import cache, partial
from typing import Annotated, Any

from pydantic import AfterValidator, Field


def plain_name(value: str, what: str = "a name") -> str:
    """`value`, or ValueError saying what is wrong with it (for pydantic validators)."""
    for char in value:
        category = unicodedata.category(char)
        if category == "Cc":
            raise ValueError(f"{what} may not hold control characters (found U+{ord(char):04X})")
        if category == "Cf":
            raise ValueError(
                f"{what} may not hold invisible formatting characters (found U+{ord(char):04X})"
            )
    if not any(not char.isspace() for char in value):
        raise ValueError(f"{what} needs something visible in it")
    return value


def visible(text: str) -> str:
    """A content (a message) with something besides whitespace in it, or ValueError."""
    if not text.strip():
        raise ValueError("needs something besides whitespace")
    return text


def xml_attribute(text: str) -> str:
    """`text` safe inside a double-quoted attribute of the XML-like tags prompts use."""
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _optional(what: str, value: str) -> str:
    return plain_name(value, what) if value else value


def _escape(char: str) -> str:
    """Escaped only where a class needs it, so that Python's and ECMA's regexes agree."""
    return "\\" + char if char in "\\]^-[" else char


def _char_class(chars: list[str]) -> str:
    """`chars` as the inside of a regex character class, consecutive ones as ranges."""
    parts: list[str] = []
    start = previous = None
    for char in [*chars, None]:
        if char is not None and previous is not None and ord(char) == ord(previous) + 1:
            previous = char
            continue
        if start is not None and previous is not None:
            parts.append(_escape(start) + ("" if start == previous else "-" + _escape(previous)))
        start = previous = char
    return "".join(parts)


@cache  # a walk over every code point (half a second): once, when a schema is made
def name_pattern() -> str:
    """plain_name's rule as a regex for the OpenAPI document (clients generate from it; the
    validator above stays what decides, with its clearer messages)."""
    every = [chr(c) for c in range(sys.maxunicode + 1)]
    hidden = [c for c in every if unicodedata.category(c) in ("Cc", "Cf")]
    blank = [c for c in every if c.isspace() and unicodedata.category(c) not in ("Cc", "Cf")]
    allowed = f"[^{_char_class(hidden)}]*"
    return f"^{allowed}[^{_char_class(hidden + blank)}]{allowed}$"


def _name_rule(schema: dict[str, Any]) -> None:
    schema["pattern"] = name_pattern()


def _title_rule(schema: dict[str, Any]) -> None:
    schema["pattern"] = f"^$|{name_pattern()}"


# What request models declare, so that every name is checked by the same rule.
PlainName = Annotated[str, AfterValidator(plain_name), Field(json_schema_extra=_name_rule)]
BlockName = Annotated[
    str,
    AfterValidator(partial(plain_name, what="a block name")),
    Field(json_schema_extra=_name_rule),
]
MetadataKey = Annotated[str, AfterValidator(partial(plain_name, what="a metadata key"))]
Title = Annotated[  # may be empty
    str,
    AfterValidator(partial(_optional, "a title")),
    Field(json_schema_extra=_title_rule),
]
