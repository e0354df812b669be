"""If-Match on block writes: the version a client read, so that its write lands only on
what it saw (RFC 9110 13.1.1). Absent or `*`: no precondition."""

import re
from typing import Annotated

from fastapi import Depends, Header

from api.errors import AppError
from api.memory.errors import (
    BlockFull,
    BlockNotFound,
    BlockTooLarge,
    InvalidBlockName,
    MemoryBusy,
    VersionMismatch,
)

_TAG = re.compile(r'\s*(?:W/)?"?(\d{1,18})"?\s*')
# Any other entity-tag (RFC 9110 8.8.3): well-formed, so a precondition that fails (412),
# since no block's version is spelled so; only what is no entity-tag at all is a 400.
_OTHER_TAG = re.compile(r'\s*(?:W/)?"[\x21\x23-\x7e\x80-\U0010ffff]*"\s*')
NEVER = -1  # the version such a tag asks for: none has it
IF_MATCH_PATTERN = r'^[ \t]*(?:\*|(?:W/)?"?[0-9]{1,18}"?|(?:W/)?"[^"\x00-\x20\x7f]*")[ \t]*$'


class InvalidPrecondition(AppError):
    status_code = 400
    code = "invalid_if_match"


# The refusals of any write to a block, If-Match included: for the routes that document
# them (ours and seed 002's PUT /memory-blocks).
BLOCK_WRITE = (
    InvalidBlockName,
    InvalidPrecondition,
    BlockNotFound,
    BlockFull,
    BlockTooLarge,
    VersionMismatch,
    MemoryBusy,
)


async def if_match(
    value: Annotated[
        str | None,
        Header(
            alias="If-Match",
            description='The block version you read (its ETag, e.g. "3"); on a mismatch the '
            "write is refused with 412",
            json_schema_extra={"pattern": IF_MATCH_PATTERN},
        ),
    ] = None,
) -> int | None:
    if value is None or value.strip() == "*":
        return None
    found = _TAG.fullmatch(value)
    if found is None and _OTHER_TAG.fullmatch(value):
        return NEVER
    if found is None:
        raise InvalidPrecondition(
            f'If-Match must be a block version as its ETag gives it (for example "3"), '
            f"not {value[:40]!r}."
        )
    return int(found.group(1))


IfMatch = Annotated[int | None, Depends(if_match)]
