"""Small asyncio helpers."""

from typing import TypeVar

T = TypeVar("T")


async def ready(value: T) -> T:
    """`value` as an awaitable: a branch of an `asyncio.gather` whose answer is already
    at hand (the other branches still read concurrently)."""
    return value
