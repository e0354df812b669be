"""What a turn writes in the transaction that ends its run, besides the run's end and its
last events: its answer with the answer's searchable copy, the conversation's lease given
back, and the turn's time as its conversation's last activity and its agent's last use.
One write where there were several; each part can still be written on its own, as it was
before, when the transaction is refused (a replayed answer, a conversation being deleted,
a lease lost)."""

import logging
from collections.abc import Awaitable, Callable, Sequence

from api.store.table import PK, SK, Check, Item, Key, Put, TxOp

log = logging.getLogger(__name__)


def _key(op: TxOp) -> Key:
    return Key(op.item[PK], op.item[SK]) if isinstance(op, Put) else op.key


class ClosingWrite:
    """A part of the closing transaction."""

    async def writes(self) -> tuple[Sequence[TxOp], Sequence[Item]]:
        """The writes, and the searchable items among them (for the search's change log)."""
        raise NotImplementedError

    def written(self) -> None:
        """The transaction that carried `writes()` committed."""

    async def alone(self) -> None:
        """The same part written on its own, when the transaction was refused."""
        raise NotImplementedError


# Writes ops in one transaction, through the search's change log when they put searchable
# items (the upserts): the agent's search index on every replica learns of them.
Commit = Callable[[Sequence[TxOp], Sequence[Item]], Awaitable[None]]


class Closing:
    """The parts a turn adds, in order, for its run's end to carry."""

    def __init__(self, commit: Commit) -> None:
        self._commit = commit
        self.parts: list[ClosingWrite] = []

    def add(self, part: ClosingWrite) -> None:
        self.parts.append(part)

    async def commit(self, ops: Sequence[TxOp]) -> None:
        """`ops` and every part, in one transaction (StoreError, as the store refuses it)."""
        parts, upserts = await self._writes()
        await self._commit([*parts, *ops], upserts)
        for part in self.parts:
            part.written()

    async def _writes(self) -> tuple[list[TxOp], list[Item]]:
        # One after another: their waits (a vector made since the message was) are over
        # by now, and a task each would cost more than it saves.
        made = [await part.writes() for part in self.parts]
        # A transaction may name an item once. Two parts may check the same item (their
        # conversation is open), and a part may write an item under the very condition
        # another checks (the conversation's activity, written while it is open): the
        # write stands for the checks.
        written = {
            _key(op): op.condition
            for part_ops, _ in made
            for op in part_ops
            if not isinstance(op, Check)
        }
        ops: list[TxOp] = []
        checked: set[Key] = set()
        upserts: list[Item] = []
        for part_ops, part_upserts in made:
            for op in part_ops:
                if isinstance(op, Check):
                    if op.key in checked or written.get(op.key) == op.condition:
                        continue
                    checked.add(op.key)
                ops.append(op)
            upserts += part_upserts
        return ops, upserts

    async def alone(self) -> None:
        """Each part on its own, in order; one that fails does not stop the others."""
        for part in self.parts:
            try:
                await part.alone()
            except Exception:
                log.warning("a write that ends a turn failed", exc_info=True)
