"""The queue port: `send` a run of a group (the subject's agent: one group's runs are done in
order, one at a time), `receive` what to do next, `extend` the time a received run stays
ours while it is worked, `retry` it later, `ack` it once it ended. Deliveries are at least
once: a run may come twice (the worker reads its state in the table and skips an ended
one)."""

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Delivery:
    group: str  # the subject's agent id
    run_id: str
    receipt: str = ""  # the adapter's handle on this delivery


class RunQueue(Protocol):
    @property
    def name(self) -> str: ...

    async def send(self, group: str, run_id: str) -> None:
        """Queued for a worker; sending a run already queued is harmless."""
        ...

    async def receive(self, *, wait_seconds: float) -> list[Delivery]:
        """What to do next, waiting up to `wait_seconds` for something (maybe nothing)."""
        ...

    async def extend(self, delivery: Delivery, seconds: float) -> None:
        """Nobody else receives it for `seconds` from now (it is being worked)."""
        ...

    async def retry(self, delivery: Delivery, delay_seconds: float) -> None:
        """Delivered again after `delay_seconds` (busy, or an attempt that failed)."""
        ...

    async def ack(self, delivery: Delivery) -> None:
        """Done with: never delivered again."""
        ...

    async def aclose(self) -> None: ...
