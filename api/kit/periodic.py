"""A background sweep: one piece of work now, then every so often, for as long as the
process runs (the lifespan cancels it). The sweeps (expired items, runs of dead processes,
memory runs left behind) read and write the store, so they name the store's failures (a
throttle, an outage) as the errors they live with: logged, and the work tried again next
time; any other error is a bug and ends the loop loudly."""

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def every(
    seconds: float,
    work: Callable[[], Awaitable[object]],
    what: str,
    tolerated: tuple[type[Exception], ...],
) -> None:
    """`work` at once, then `seconds` after each run of it; `what` names it in the log, and
    `tolerated` the errors that only skip a run."""
    while True:
        try:
            await work()
        except tolerated as e:
            log.warning("%s failed: %s", what, e)
        await asyncio.sleep(seconds)
