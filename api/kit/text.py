"""Names people give things (agents, conversations, blocks, metadata keys) end up in
prompts, logs and other people's screens: no control characters, no invisible formatting
(bidi overrides that reverse what a reader sees, zero-width characters), and something
visible in them. Contents (a block's lines, a message) are not names and keep newlines."""

import unicodedata
from functools import partial
from typing import Annotated

from pydantic import AfterValidator


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


def _optional(what: str, value: str) -> str:
    return plain_name(value, what) if value else value


# What request models declare, so that every name is checked by the same rule.
PlainName = Annotated[str, AfterValidator(plain_name)]
BlockName = Annotated[str, AfterValidator(partial(plain_name, what="a block name"))]
MetadataKey = Annotated[str, AfterValidator(partial(plain_name, what="a metadata key"))]
Title = Annotated[str, AfterValidator(partial(_optional, "a title"))]  # may be empty
