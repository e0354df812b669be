"""The embedded default: the queue is the table. A run is durable from the moment it is
accepted (its item, its place in the subject's queue and a pending marker are written with
the messages); this adapter only wakes this process's workers. What a dead process had
queued or was running is found by the sweep (api/memory_runs/service.py) and sent again,
so nothing here needs to survive a restart."""

import asyncio
import contextlib

from api.queue.base import Delivery


class LocalQueue:
    name = "local"

    def __init__(self) -> None:
        self._ready: asyncio.Queue[Delivery] = asyncio.Queue()
        self._queued: set[str] = set()  # run ids waiting in _ready: sent twice, kept once
        self._later: set[asyncio.TimerHandle] = set()

    async def send(self, group: str, run_id: str) -> None:
        self._put(Delivery(group, run_id))

    def _put(self, delivery: Delivery) -> None:
        if delivery.run_id in self._queued:
            return
        self._queued.add(delivery.run_id)
        self._ready.put_nowait(delivery)

    async def receive(self, *, wait_seconds: float) -> list[Delivery]:
        with contextlib.suppress(TimeoutError):
            delivery = await asyncio.wait_for(self._ready.get(), wait_seconds)
            self._queued.discard(delivery.run_id)
            return [delivery]
        return []

    async def extend(self, delivery: Delivery, seconds: float) -> None:
        return None  # only this process's workers receive: nobody else can take it

    async def retry(self, delivery: Delivery, delay_seconds: float) -> None:
        def again() -> None:
            self._later.discard(handle)
            self._put(delivery)

        handle = asyncio.get_running_loop().call_later(delay_seconds, again)
        self._later.add(handle)

    async def ack(self, delivery: Delivery) -> None:
        return None

    async def aclose(self) -> None:
        for handle in self._later:
            handle.cancel()
        self._later.clear()
