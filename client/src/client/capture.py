"""Storing what was said, off the call's path: each call hands its exchange (the user's
message, then the reply) to one worker thread per learning() context, which posts the
messages in order. A failure is logged, counted and kept for the caller to read; it never
reaches the model call. The context's exit waits for the queue to drain (flush)."""

import logging
import queue
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from client.apis import Reply
from client.server import MAX_CONTENT_CHARS, MemoryServer

log = logging.getLogger(__name__)

MAX_ERRORS_KEPT = 50
MAX_TOOL_CALLS_IN_METADATA = 10
MAX_ARGUMENT_CHARS = 2_000
# How long a capture waits for the next call's memory fetch to start, so as to go after it.
FETCH_GRACE = 0.005


@dataclass(frozen=True)
class Note:
    """One message to store."""

    role: str
    content: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class Exchange:
    notes: tuple[Note, ...]


def exchange(
    *,
    api: str,
    model: str | None,
    user: str | None,
    reply: Reply | None,
    stream: bool,
    interrupted: bool = False,
) -> Exchange:
    """The messages one call leaves: the user's (when the request ended with it) and the
    reply (its text, then one line per tool call; nothing when nothing arrived)."""
    base: dict[str, Any] = {"source": "learning", "api": api}
    if model := (reply.model if reply and reply.model else model):
        base["model"] = model
    if stream:
        base["stream"] = True
    notes: list[Note] = []
    if user and user.strip():
        notes.append(Note("user", _fit(user), base))
    if reply is not None and (content := reply_content(reply)):
        metadata = dict(base)
        if interrupted:  # the reply was cut, never the question
            metadata["interrupted"] = True
        if reply.tool_calls:
            metadata["tool_calls"] = [
                {"id": call.id, "name": call.name, "arguments": call.arguments[:MAX_ARGUMENT_CHARS]}
                for call in reply.tool_calls[:MAX_TOOL_CALLS_IN_METADATA]
            ]
        notes.append(Note("assistant", _fit(content), metadata))
    return Exchange(tuple(notes))


def reply_content(reply: Reply) -> str:
    lines = [reply.text.strip()] if reply.text.strip() else []
    lines += [f"[tool call] {call.name}({call.arguments})" for call in reply.tool_calls]
    return "\n".join(lines)


def _fit(text: str) -> str:
    return text if len(text) <= MAX_CONTENT_CHARS else text[: MAX_CONTENT_CHARS - 1] + "…"


@dataclass
class Counts:
    stored: int = 0
    capture_failures: int = 0
    context_failures: int = 0
    pending: int = 0
    # The context ended: nothing more is taken (what comes is counted as not stored).
    closed: bool = False
    # The exit's flush gave up: what was pending is counted as failed, and what the worker
    # still finishes is no longer counted (it was counted then).
    given_up: bool = False
    errors: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_ERRORS_KEPT))


class Recorder:
    """The context's counters, shared by the calling threads and the worker."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.counts = Counts()
        self.changed = threading.Condition()

    def failure(self, kind: str, message: str, *, count: int = 1) -> None:
        """`count` failures of one kind ("context": a call without memory; "capture":
        messages not stored), told once."""
        with self.changed:
            if kind == "context":
                self.counts.context_failures += count
            else:
                self.counts.capture_failures += count
            self.counts.errors.append(message)
            self.changed.notify_all()
        self._warn(message)

    def queued(self, notes: int) -> bool:
        """False once the context has ended (nothing more is taken)."""
        with self.changed:
            if self.counts.closed:
                return False
            self.counts.pending += notes
            return True

    def closed(self) -> bool:
        with self.changed:
            return self.counts.closed

    def close_intake(self) -> None:
        with self.changed:
            self.counts.closed = True

    def settled(self, error: str | None) -> None:
        """One queued message stored (no error) or failed."""
        with self.changed:
            if self.counts.given_up:
                return
            self.counts.pending -= 1
            if error is None:
                self.counts.stored += 1
            else:
                self.counts.capture_failures += 1
                self.counts.errors.append(error)
            self.changed.notify_all()
        if error is not None:
            self._warn(error)

    def give_up(self, timeout: float) -> None:
        with self.changed:
            self.counts.given_up = True
            left, self.counts.pending = self.counts.pending, 0
            message = f"{left} message(s) were not stored within {timeout:g}s of the context's end"
            if left:
                self.counts.capture_failures += left
                self.counts.errors.append(message)
            self.changed.notify_all()
        if left:
            self._warn(message)

    def abandoned(self) -> bool:
        with self.changed:
            return self.counts.given_up

    def wait_drained(self, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.counts.pending <= 0, timeout)

    def _warn(self, message: str) -> None:
        log.warning("learning(agent=%r): %s", self.agent, message)


class Foreground:
    """The context's memory fetches under way. The capture worker lets them go first: a
    server takes a capture's write and a fetch arriving with it in turns, and the fetch
    is what a caller waits for (a loop of calls fetches right after each capture)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._fetching = 0
        self._started = 0

    @contextmanager
    def fetching(self) -> Iterator[None]:
        with self._changed:
            self._fetching += 1
            self._started += 1
            self._changed.notify_all()
        try:
            yield
        finally:
            with self._changed:
                self._fetching -= 1
                self._changed.notify_all()

    def let_go_first(self, grace: float, limit: float) -> None:
        """Wait `grace` seconds at most for a fetch to start (the call after the one just
        captured is about to make one), then while any runs (`limit` seconds at most: a
        fetch is bounded by the request timeout anyway)."""
        with self._changed:
            started = self._started
            self._changed.wait_for(lambda: self._fetching > 0 or self._started != started, grace)
            self._changed.wait_for(lambda: self._fetching == 0, limit)


_STOP = object()


class CaptureWorker:
    """One thread posting exchanges in the order they were handed over."""

    def __init__(
        self,
        server: MemoryServer,
        agent: str,
        recorder: Recorder,
        foreground: Foreground | None = None,
        *,
        yield_for: float = 5.0,
    ) -> None:
        self._server = server
        self._agent = agent
        self._recorder = recorder
        self._foreground = foreground or Foreground()
        self._yield_for = yield_for
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._intake = threading.Lock()
        self._thread = threading.Thread(
            target=self._run, name=f"learning-capture-{agent}", daemon=True
        )
        self._thread.start()

    def submit(self, item: Exchange) -> None:
        """Queue the exchange; after the context's end it is counted as not stored."""
        if not item.notes:
            return
        with self._intake:  # so that nothing is queued behind close()'s stop
            accepted = self._recorder.queued(len(item.notes))
            if accepted:
                self._queue.put(item)
        if not accepted:
            self._recorder.failure(
                "capture",
                f"{len(item.notes)} message(s) arrived after the context ended",
                count=len(item.notes),
            )

    def flush(self, timeout: float) -> bool:
        """Wait until everything handed over so far is stored or failed."""
        return self._recorder.wait_drained(timeout)

    def close(self, timeout: float) -> None:
        """Flush, then stop the thread. What is still queued at the deadline is counted as
        failed, not lost unseen."""
        with self._intake:
            self._recorder.close_intake()
            self._queue.put(_STOP)
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._recorder.give_up(timeout)

    def _run(self) -> None:
        while (item := self._queue.get()) is not _STOP:
            assert isinstance(item, Exchange)
            self._store(item.notes)

    def _store(self, notes: Sequence[Note]) -> None:
        """The exchange's messages: in one request where the server takes a batch (all or
        none), else one request each."""
        # The grace only for the latest exchange of a context still taking calls: with
        # more queued, or the context ended, no fetch is about to follow this one.
        grace = FETCH_GRACE if self._queue.empty() and not self._recorder.closed() else 0.0
        self._foreground.let_go_first(grace, self._yield_for)
        if self._recorder.abandoned():
            return  # counted when the flush gave up
        if len(notes) > 1 and self._server.batches:
            try:
                batched = self._server.add_messages(
                    self._agent, [(note.role, note.content, note.metadata) for note in notes]
                )
            except Exception as e:  # any failure is counted; none reaches the caller
                for note in notes:
                    self._recorder.settled(f"the {note.role} message was not stored: {e}")
                return
            if batched:
                for _ in notes:
                    self._recorder.settled(None)
                return
        for note in notes:
            if self._recorder.abandoned():
                return
            try:
                self._server.add_message(self._agent, note.role, note.content, note.metadata)
            except Exception as e:
                self._recorder.settled(f"the {note.role} message was not stored: {e}")
            else:
                self._recorder.settled(None)
