"""A background sweep: one piece of work now, then every so often, for as long as the
process runs (the lifespan cancels it). The sweeps (expired items, runs of dead processes,
memory runs left behind) read and write the store, so a store failure (a throttle, an
outage) is logged and the work tried again next time; any other error is a bug and ends
the loop loudly."""

import asyncio
import logging
from collections.abc import Awaitable, Callable

from api.store.table import StoreError

log = logging.getLogger(__name__)


async def every(seconds: float, work: Callable[[], Awaitable[object]], what: str) -> None:
    """`work` at once, then `seconds` after each run of it; `what` names it in the log."""
    while True:
        try:
            await work()
        except StoreError as e:
            log.warning("%s failed: %s", what, e)
        await asyncio.sleep(seconds)
