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
            json_schema_extra={"pattern": r'^[ \t]*(?:\*|(?:W/)?"?[0-9]{1,18}"?)[ \t]*$'},
        ),
    ] = None,
) -> int | None:
    if value is None or value.strip() == "*":
        return None
    found = _TAG.fullmatch(value)
    if found is None:
        raise InvalidPrecondition(
            f'If-Match must be a block version as its ETag gives it (for example "3"), '
            f"not {value[:40]!r}."
        )
    return int(found.group(1))


IfMatch = Annotated[int | None, Depends(if_match)]
