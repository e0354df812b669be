"""Storing what was said, off the call's path: each call hands its exchange (the user's
message, then the reply) to one worker thread per learning() context, which posts the
messages in order. A failure is logged, counted and kept for the caller to read; it never
reaches the model call. The context's exit waits for the queue to drain (flush)."""

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from client.apis import Reply
from client.server import MAX_CONTENT_CHARS, MemoryServer

log = logging.getLogger(__name__)

MAX_ERRORS_KEPT = 50
MAX_TOOL_CALLS_IN_METADATA = 10
MAX_ARGUMENT_CHARS = 2_000


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
    if interrupted:
        base["interrupted"] = True
    notes: list[Note] = []
    if user and user.strip():
        notes.append(Note("user", _fit(user), base))
    if reply is not None and (content := reply_content(reply)):
        metadata = dict(base)
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
    errors: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_ERRORS_KEPT))


class Recorder:
    """The context's counters, shared by the calling threads and the worker."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.counts = Counts()
        self.changed = threading.Condition()

    def failure(self, kind: str, message: str) -> None:
        with self.changed:
            if kind == "context":
                self.counts.context_failures += 1
            else:
                self.counts.capture_failures += 1
            self.counts.errors.append(message)
            self.changed.notify_all()
        log.warning("learning(agent=%r): %s", self.agent, message)

    def stored(self) -> None:
        with self.changed:
            self.counts.stored += 1

    def queued(self, notes: int) -> None:
        with self.changed:
            self.counts.pending += notes

    def done(self, notes: int) -> None:
        with self.changed:
            self.counts.pending -= notes
            self.changed.notify_all()

    def wait_drained(self, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.counts.pending <= 0, timeout)


_STOP = object()


class CaptureWorker:
    """One thread posting exchanges in the order they were handed over."""

    def __init__(self, server: MemoryServer, agent: str, recorder: Recorder) -> None:
        self._server = server
        self._agent = agent
        self._recorder = recorder
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._abandoned = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"learning-capture-{agent}", daemon=True
        )
        self._thread.start()

    def submit(self, item: Exchange) -> None:
        if not item.notes:
            return
        if self._abandoned.is_set():
            self._recorder.failure(
                "capture", f"{len(item.notes)} message(s) arrived after the context ended"
            )
            return
        self._recorder.queued(len(item.notes))
        self._queue.put(item)

    def flush(self, timeout: float) -> bool:
        """Wait until everything handed over so far is stored or failed."""
        return self._recorder.wait_drained(timeout)

    def close(self, timeout: float) -> None:
        """Flush, then stop the thread. What is still queued at the deadline is counted as
        failed, not lost unseen."""
        deadline = time.monotonic() + timeout
        self._queue.put(_STOP)
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            self._abandoned.set()
            with self._recorder.changed:
                left = self._recorder.counts.pending
            if left > 0:
                self._recorder.failure(
                    "capture",
                    f"{left} message(s) were not stored within {timeout:g}s of the "
                    "context's end",
                )

    def _run(self) -> None:
        while (item := self._queue.get()) is not _STOP:
            assert isinstance(item, Exchange)
            self._store(item.notes)

    def _store(self, notes: Sequence[Note]) -> None:
        for note in notes:
            if self._abandoned.is_set():
                return  # counted by close()
            try:
                self._server.add_message(self._agent, note.role, note.content, note.metadata)
            except Exception as e:  # any failure is counted; none reaches the caller
                if not self._abandoned.is_set():  # else close() counted it already
                    self._recorder.failure(
                        "capture", f"the {note.role} message was not stored: {e}"
                    )
            else:
                if not self._abandoned.is_set():
                    self._recorder.stored()
            finally:
                self._recorder.done(1)
