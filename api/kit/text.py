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


# Python's whitespace (what str.strip takes away), listed: a pattern's `\s` means other
# things in Python's `re` and in the ECMA regexes of JSON Schema (\x1c-\x1f, \x85, \ufeff).
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
    "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# `visible` as a pattern, for the OpenAPI document only: pydantic runs `visible`, whose
# message a person reads, not the pattern.
VISIBLE_PATTERN = "[^" + "".join(f"\\u{ord(c):04x}" for c in WHITESPACE) + "]"
Visible = Annotated[
    str, AfterValidator(visible), Field(json_schema_extra={"pattern": VISIBLE_PATTERN})
]


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
