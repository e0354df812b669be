"""The vectors of the texts this process embedded last, so that a text is embedded once
however often it comes back soon: the learning() client fetches context for a user's
message (embedding it as the query) and then stores that same message (embedding it
again); a retried request or a repeated question does the same. With a remote backend
each hit saves an HTTP round trip, with the static model the tokenizer's work.

A vector depends only on the text and the model, and one engine has one model for its
life, so a cached vector is exactly what the backend would return again. The vectors are
kept read-only: every caller shares them."""

from collections import OrderedDict

import numpy as np

from api.search.vectors import Vector

MAX_TEXTS = 1024
# Longer texts are embedded every time: a document rarely comes back, and the cache's
# memory stays bounded (at most MAX_TEXTS * MAX_CHARS characters of keys).
MAX_CHARS = 4096


class RecentVectors:
    """Least recently used first out; texts over `max_chars` are never kept."""

    def __init__(self, max_texts: int = MAX_TEXTS, max_chars: int = MAX_CHARS) -> None:
        self.max_texts = max_texts
        self.max_chars = max_chars
        self._vectors: OrderedDict[str, Vector] = OrderedDict()

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, text: str) -> Vector | None:
        vector = self._vectors.get(text)
        if vector is not None:
            self._vectors.move_to_end(text)
        return vector

    def keep(self, text: str, vector: Vector) -> Vector:
        """`vector` as kept: a read-only copy of its own (a row of a batch would hold the
        whole batch in memory), returned so the caller hands out what later hits will."""
        kept = np.array(vector, dtype=np.float32, copy=True)
        kept.flags.writeable = False
        if len(text) <= self.max_chars and self.max_texts > 0:
            self._vectors[text] = kept
            self._vectors.move_to_end(text)
            while len(self._vectors) > self.max_texts:
                self._vectors.popitem(last=False)
        return kept
