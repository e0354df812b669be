"""Wakes the readers of a run in this process as soon as its journal writes: they need not
poll the table for what this process wrote. Readers on other replicas poll."""

import asyncio
import contextlib


class RunBus:
    def __init__(self) -> None:
        self._waiting: dict[str, tuple[asyncio.Event, int]] = {}  # run id: (event, readers)

    def touch(self, run_id: str) -> None:
        found = self._waiting.pop(run_id, None)
        if found is not None:
            found[0].set()

    async def wait(self, run_id: str, seconds: float) -> None:
        """Until the run's journal next writes, or `seconds` have passed."""
        event, readers = self._waiting.get(run_id, (asyncio.Event(), 0))
        self._waiting[run_id] = (event, readers + 1)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), seconds)
        finally:
            current = self._waiting.get(run_id)
            if current is not None and current[0] is event:
                if current[1] <= 1:
                    del self._waiting[run_id]
                else:
                    self._waiting[run_id] = (event, current[1] - 1)
