"""Storing what was said, off the call's path: each call hands its exchange (the user's
message, then the reply) to one worker thread per learning() context, which posts the
messages in order. A failure is logged, counted and kept for the caller to read; it never
reaches the model call. The context's exit waits for the queue to drain (flush).

The worker never competes with the context's memory fetches: it lets a fetch under way
(or about to start) go first, and when the calls leave less time between one fetch and the
next than a capture takes (a tool loop on a fast model), it holds the exchanges and sends
them together in a later gap, at most HOLD_SECONDS later, at a flush, or at the exit."""

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from client.apis import Reply
from client.errors import MemoryServerError
from client.server import MAX_BATCH_MESSAGES, MAX_CONTENT_CHARS, MemoryServer

log = logging.getLogger(__name__)

MAX_ERRORS_KEPT = 50
MAX_TOOL_CALLS_IN_METADATA = 10
MAX_ARGUMENT_CHARS = 2_000
# How long a capture waits for the next call's memory fetch to start, so as to go after it.
FETCH_GRACE = 0.005
# Exchanges held for a gap between calls wait this long at most, and this many messages.
HOLD_SECONDS = 1.0
MAX_HELD_MESSAGES = 40
# What a capture request is taken to last before one was timed (a server on loopback
# answers in 2-5 ms), and how much longer than it a gap must be to send in it: the server
# must be done with the capture before the next fetch arrives.
ASSUMED_CAPTURE_SECONDS = 0.01
GAP_MARGIN = 1.5
# How long a capture sent in a gap waits after the fetch: the caller's model request
# goes out first.
SETTLE_SECONDS = 0.005
GAPS_KEPT = 5


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
    """The context's memory fetches under way, and the time its calls leave between one
    fetch's end and the next one's start (the model's answer, the caller's own work). The
    capture worker lets fetches go first: a server takes a capture's write and a fetch
    arriving with it in turns, and the fetch is what a caller waits for."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._fetching = 0
        self._started = 0
        self._ended_at: float | None = None
        self._gaps: deque[float] = deque(maxlen=GAPS_KEPT)

    @contextmanager
    def fetching(self) -> Iterator[None]:
        with self._changed:
            if self._fetching == 0 and self._ended_at is not None:
                self._gaps.append(time.monotonic() - self._ended_at)
            self._fetching += 1
            self._started += 1
            # No one is woken here: the worker waits for the fetch to end, and each
            # wake-up of its thread takes the interpreter from the caller's for a while.
        try:
            yield
        finally:
            with self._changed:
                self._fetching -= 1
                if self._fetching == 0:
                    self._ended_at = time.monotonic()
                    self._changed.notify_all()

    def let_go_first(self, grace: float, limit: float) -> bool:
        """Wait `grace` seconds at most for a fetch to start (the call after the one just
        captured is about to make one), then while any runs (`limit` seconds at most: a
        fetch is bounded by the request timeout anyway). True when a fetch ran meanwhile:
        the calls go on, and the next fetch comes about one gap later."""
        with self._changed:
            started = self._started
            busy = self._fetching > 0
            # One wake-up when a fetch ends within the grace; a longer one is waited
            # for below.
            self._changed.wait_for(
                lambda: (busy or self._started != started) and self._fetching == 0, grace
            )
            ran = busy or self._started != started
            self._changed.wait_for(lambda: self._fetching == 0, limit)
            return ran

    def gap(self) -> float | None:
        """The usual time between a fetch's end and the next one's start (the median of
        the latest few); None before two fetches."""
        with self._changed:
            gaps = sorted(self._gaps)
        if not gaps:
            return None
        middle = len(gaps) // 2
        return gaps[middle] if len(gaps) % 2 else (gaps[middle - 1] + gaps[middle]) / 2


_STOP = object()
_FLUSH = object()  # Learning.flush(): send what is held now


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
        # How long the latest capture request took: the gap a capture needs.
        self._capture_seconds = ASSUMED_CAPTURE_SECONDS
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
        """Send what is held at once, and wait until everything handed over so far is
        stored or failed."""
        self._queue.put(_FLUSH)
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
        held: list[Exchange] = []
        since = 0.0  # when the oldest held exchange was taken
        while True:
            wait = max(0.0, since + HOLD_SECONDS - time.monotonic()) if held else None
            try:
                item = self._queue.get(timeout=wait)
            except queue.Empty:
                item = None  # held long enough: sent in spite of the calls
            if isinstance(item, Exchange):
                if not held:
                    since = time.monotonic()
                held.append(item)
                full = (
                    time.monotonic() - since >= HOLD_SECONDS
                    or sum(len(e.notes) for e in held) >= MAX_HELD_MESSAGES
                )
                # What is queued joins them first (an exchange; a flush or the end sends).
                if not full and (not self._queue.empty() or self._hold()):
                    continue
            if held:
                self._send(held)
                held = []
            if item is _STOP:
                return

    def _hold(self) -> bool:
        """Let the next fetch go first; then whether to keep what is held for a later gap:
        the calls leave too little time between fetches for a capture to be done before
        the next one arrives."""
        closing = self._recorder.closed()
        # The grace only while the context takes calls: after its end no fetch follows.
        ran = self._foreground.let_go_first(0.0 if closing else FETCH_GRACE, self._yield_for)
        if not self._queue.empty():
            return True  # taken next: an exchange joins them, a flush or the end sends them
        if closing or not ran:
            return False
        gap = self._foreground.gap()
        if gap is not None and gap < SETTLE_SECONDS + GAP_MARGIN * self._capture_seconds:
            return True
        # The fetch just ended: the caller's SDK is building and sending its request. A
        # capture sent at once would take the interpreter (and a core) from it.
        time.sleep(SETTLE_SECONDS)
        return not self._queue.empty()

    def _send(self, held: Sequence[Exchange]) -> None:
        """The exchanges in order, as few requests as the server's batch limit allows; an
        exchange is never split between two. Each request lets a fetch under way go first."""
        chunk: list[Exchange] = []
        for item in held:
            if chunk and sum(len(e.notes) for e in chunk) + len(item.notes) > MAX_BATCH_MESSAGES:
                self._store_together(chunk)
                chunk = []
            chunk.append(item)
        if chunk:
            self._store_together(chunk)

    def _store_together(self, chunk: Sequence[Exchange]) -> None:
        """Several exchanges in one request where the server takes batches; refused for
        what one exchange can cause (`_refused`), each is sent again on its own, so that
        one the server will not take does not take the others with it. Timed as a whole,
        whatever the outcome: how long the server is kept busy, the gap a send needs
        (two POST /messages an exchange on a server without batches)."""
        notes = [note for item in chunk for note in item.notes]
        self._foreground.let_go_first(0.0, self._yield_for)
        if self._recorder.abandoned():
            return  # counted when the flush gave up
        start = time.monotonic()
        try:
            if len(chunk) == 1 or not self._server.batches:
                self._store(notes)
                return
            try:
                batched = self._server.add_messages(self._agent, _said(notes))
            except Exception as e:  # any failure is counted; none reaches the caller
                if _refused(e):
                    for item in chunk:
                        self._store(item.notes)
                else:
                    self._failed(notes, e)
                return
            if batched:
                self._stored(notes)
            else:
                self._store(notes)  # the server has no batches: one request a message
        finally:
            self._capture_seconds = time.monotonic() - start

    def _store(self, notes: Sequence[Note]) -> None:
        """The messages: in one request where the server takes a batch (all or none), else
        one request each. A fetch under way goes first."""
        self._foreground.let_go_first(0.0, self._yield_for)
        if self._recorder.abandoned():
            return  # counted when the flush gave up
        if len(notes) > 1 and self._server.batches:
            try:
                batched = self._server.add_messages(self._agent, _said(notes))
            except Exception as e:
                self._failed(notes, e)
                return
            if batched:
                self._stored(notes)
                return
        for note in notes:
            if self._recorder.abandoned():
                return
            try:
                self._server.add_message(self._agent, note.role, note.content, note.metadata)
            except Exception as e:
                self._failed([note], e)
            else:
                self._stored([note])

    def _stored(self, notes: Sequence[Note]) -> None:
        for _ in notes:
            self._recorder.settled(None)

    def _failed(self, notes: Sequence[Note], error: Exception) -> None:
        for note in notes:
            self._recorder.settled(f"the {note.role} message was not stored: {error}")


def _said(notes: Sequence[Note]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(note.role, note.content, note.metadata) for note in notes]


def _refused(error: Exception) -> bool:
    """A refusal one exchange of a batch can cause: invalid (400, 422) or too large (413).
    Not an unreachable server (no status), a missing key or agent (401, 403, 404), a
    server failing (5xx) or asking for fewer requests (429): those would fail each
    exchange alike, and sending them one by one would only add requests."""
    return isinstance(error, MemoryServerError) and error.status in (400, 413, 422)
