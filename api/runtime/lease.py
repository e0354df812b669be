"""One turn at a time in a conversation, across every replica: a turn holds the
conversation's lease item (a conditional write before its first LLM call), renews it while
it runs and frees it when it ends. A process that dies holding one frees it by expiry:
LEASE_SECONDS after its last renewal, the next turn may start."""

import asyncio
import contextlib
import logging
import math
import time

from api.conversations.repository import ConversationRepository, release_lease_op
from api.errors import AppError
from api.journal.closing import ClosingWrite
from api.kit.clock import Clock
from api.store.table import Item, StoreError, TxOp, WriteConflict

log = logging.getLogger(__name__)

LEASE_SECONDS = 30.0
RENEW_EVERY_SECONDS = LEASE_SECONDS / 3
WAIT_STEP_SECONDS = 0.25  # how often a turn that waits its turn tries again


# What a refused turn is told to wait: a turn usually ends within seconds, and its end
# frees the conversation at once; the lease's lapse (up to LEASE_SECONDS) is only the
# bound for a holder that died.
BUSY_RETRY_SECONDS = 2.0


class ConversationBusy(AppError):
    status_code = 409
    code = "conversation_busy"

    def __init__(self, retry_after: float) -> None:
        super().__init__(
            "A turn is already running in this conversation; send the next message when it "
            'ends, or send it with "wait": true to have it wait its turn.',
            retry_after_seconds=retry_after,
        )
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(max(1, math.ceil(self.retry_after)))}


class Renewals:
    """The leases of this process's running turns, renewed by one timer rather than by a
    task sleeping beside each turn: a turn that ends within RENEW_EVERY_SECONDS (most do)
    costs a dict entry, not a task to create and cancel."""

    def __init__(self) -> None:
        self._due: dict[Lease, float] = {}  # by time.monotonic()
        self._timer: asyncio.TimerHandle | None = None

    def keep(self, lease: "Lease") -> None:
        self._due[lease] = time.monotonic() + RENEW_EVERY_SECONDS
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(RENEW_EVERY_SECONDS, self._tick)

    def forget(self, lease: "Lease") -> None:
        self._due.pop(lease, None)

    def _tick(self) -> None:
        self._timer = None
        now = time.monotonic()
        for lease, due in list(self._due.items()):
            if due <= now:
                self._due[lease] = now + RENEW_EVERY_SECONDS
                lease.renew_soon()
        if self._due:
            wait = max(0.0, min(self._due.values()) - now)
            self._timer = asyncio.get_running_loop().call_later(wait, self._tick)


class Lease:
    def __init__(
        self,
        conversations: ConversationRepository,
        clock: Clock,
        conversation_id: str,
        holder: str,
        *,
        renewals: Renewals,
    ) -> None:
        self.conversations = conversations
        self.clock = clock
        self.conversation_id = conversation_id
        self.holder = holder
        self.renewals = renewals
        self.held = False
        self._renewing: asyncio.Task[None] | None = None  # a renewal under way

    async def take(self, *, wait_seconds: float = 0.0) -> None:
        """Held from now on, or ConversationBusy saying when to try again; with
        `wait_seconds`, tried again (every WAIT_STEP_SECONDS) until then first."""
        deadline = time.monotonic() + wait_seconds
        while True:
            until = self.clock.now() + LEASE_SECONDS
            try:
                taken = await self.conversations.take_lease(
                    self.conversation_id, self.holder, until
                )
            except WriteConflict:  # the turn before is ending: its closing frees it
                taken = False
            if taken:
                self.held = True
                return
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(min(WAIT_STEP_SECONDS, max(0.0, deadline - time.monotonic())))
        other = await self.conversations.lease_until(self.conversation_id)
        lapses = BUSY_RETRY_SECONDS if other is None else other - self.clock.now()
        raise ConversationBusy(min(BUSY_RETRY_SECONDS, lapses))

    def keep(self) -> None:
        """Renewed every RENEW_EVERY_SECONDS while the turn runs."""
        if self.held:
            self.renewals.keep(self)

    def renew_soon(self) -> None:
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.ensure_future(self._renew())

    async def _renew(self) -> None:
        until = self.clock.now() + LEASE_SECONDS
        try:
            renewed = await self.conversations.renew_lease(self.conversation_id, self.holder, until)
        except StoreError as e:  # a throttle or a blip: the lease has time left, try again
            log.warning("renewing the lease of conversation %s failed: %s", self.conversation_id, e)
            return
        if not renewed:
            log.warning("lost the lease of conversation %s", self.conversation_id)
            self.renewals.forget(self)

    async def _stop_renewing(self) -> None:
        self.renewals.forget(self)
        # Not kept here once cancelled: its CancelledError's traceback holds this lease,
        # and the lease holding the task back would make a cycle only a collection frees.
        renewing, self._renewing = self._renewing, None
        if renewing is not None:
            renewing.cancel()
            await asyncio.gather(renewing, return_exceptions=True)

    async def closing(self) -> ClosingWrite | None:
        """The release as a part of the transaction that ends the turn (no write of its
        own); None when the lease is not held."""
        await self._stop_renewing()
        return _Release(self) if self.held else None

    async def free(self) -> None:
        """Released, whatever happens to the caller meanwhile (a turn ending by
        cancellation still frees its conversation)."""
        held, self.held = self.held, False  # from here on, `keep` starts nothing
        await self._stop_renewing()
        if held:
            with contextlib.suppress(Exception):
                await asyncio.shield(
                    self.conversations.release_lease(self.conversation_id, self.holder)
                )


class _Release(ClosingWrite):
    def __init__(self, lease: Lease) -> None:
        self.lease = lease

    async def writes(self) -> tuple[list[TxOp], list[Item]]:
        lease = self.lease
        return [release_lease_op(lease.conversation_id, lease.holder)], []

    def written(self) -> None:
        self.lease.held = False

    async def alone(self) -> None:
        await self.lease.free()
