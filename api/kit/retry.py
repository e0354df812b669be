"""Optimistic writes lose races by design; the loser waits a little and tries again."""

import asyncio
import random

MAX_ATTEMPTS = 50  # 20 writers on one block need at most 20; the rest is headroom


async def backoff(attempt: int) -> None:
    # Jitter spreads the losers of a race so they do not collide again in lockstep.
    await asyncio.sleep(min(0.2, 0.005 * 2**attempt) * random.uniform(0.5, 1.5))  # noqa: S311
