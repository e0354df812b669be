"""Ollama's own HTTP API: `POST /api/embed` (a batch per request), or, on an Ollama too old
to have it, `POST /api/embeddings` (one text per request). The model's dimension is learnt
from its first answer: `start()` asks once."""

from collections.abc import Sequence
from typing import Any

import httpx2
import numpy as np

from api.embeddings.base import PROBE_TEXT, EmbeddingError, Vectors, nonblank, normalized
from api.llm.errors import brief

DEFAULT_BASE_URL = "http://localhost:11434"
DEFAULT_MODEL = "all-minilm"
# Texts per /api/embed request: a large import becomes several requests, each well within
# the timeout on a CPU.
BATCH_SIZE = 128
# Loading a model into memory can take a while on the first request; a refused or
# unanswered connection should not.
TIMEOUT = httpx2.Timeout(120.0, connect=5.0)


class OllamaUnreachable(EmbeddingError):
    """Nothing answers at the base URL, or nothing that speaks Ollama's API."""


class OllamaModelMissing(EmbeddingError):
    """Ollama runs but has not pulled the model."""


class OllamaEmbedder:
    def __init__(self, base_url: str = DEFAULT_BASE_URL, model: str = DEFAULT_MODEL) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._dimension: int | None = None
        # Set on the first answer that shows the server has no /api/embed; kept from then on.
        self._legacy = False
        self._client = httpx2.Client(timeout=TIMEOUT)
        self._async_client = httpx2.AsyncClient(timeout=TIMEOUT)

    @property
    def model_id(self) -> str:
        return f"ollama:{self.model}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            raise RuntimeError(
                f"The dimension of Ollama's {self.model!r} is known only once it has answered: "
                "`await start()` (or embed a text) first."
            )
        return self._dimension

    async def start(self) -> None:
        """Ask the model once, so that a missing server or model shows at startup and the
        dimension is known."""
        await self.embed_async([PROBE_TEXT])

    def embed(self, texts: Sequence[str]) -> Vectors:
        at = nonblank(texts)
        if not at and self._dimension is None:
            self.embed([PROBE_TEXT])
        rows: list[Any] = []
        for batch in _batches([texts[i] for i in at]):
            rows += self._ask(batch)
        return self._spread(len(texts), at, rows)

    async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        at = nonblank(texts)
        if not at and self._dimension is None:
            await self.start()
        rows: list[Any] = []
        for batch in _batches([texts[i] for i in at]):
            rows += await self._ask_async(batch)
        return self._spread(len(texts), at, rows)

    def _ask(self, batch: list[str]) -> list[Any]:
        if not self._legacy:
            body = {"model": self.model, "input": batch}
            rows = self._batch_rows(self._post("/api/embed", body), len(batch))
            if rows is not None:
                return rows
        return [
            self._single_row(self._post("/api/embeddings", {"model": self.model, "prompt": text}))
            for text in batch
        ]

    async def _ask_async(self, batch: list[str]) -> list[Any]:
        if not self._legacy:
            body = {"model": self.model, "input": batch}
            rows = self._batch_rows(await self._post_async("/api/embed", body), len(batch))
            if rows is not None:
                return rows
        single = []
        for text in batch:
            body = {"model": self.model, "prompt": text}
            single.append(self._single_row(await self._post_async("/api/embeddings", body)))
        return single

    async def aclose(self) -> None:
        self._client.close()
        await self._async_client.aclose()

    # --- the wire -------------------------------------------------------------------

    def _post(self, path: str, body: dict[str, Any]) -> httpx2.Response:
        try:
            return self._client.post(self.base_url + path, json=body)
        except httpx2.HTTPError as e:
            raise self._transport_error(e) from e

    async def _post_async(self, path: str, body: dict[str, Any]) -> httpx2.Response:
        try:
            return await self._async_client.post(self.base_url + path, json=body)
        except httpx2.HTTPError as e:
            raise self._transport_error(e) from e

    def _transport_error(self, e: httpx2.HTTPError) -> EmbeddingError:
        if isinstance(e, httpx2.ConnectError | httpx2.ConnectTimeout):
            return OllamaUnreachable(f"Ollama cannot be reached at {self.base_url}.")
        if isinstance(e, httpx2.TimeoutException):
            return EmbeddingError(f"Ollama at {self.base_url} did not answer in time.")
        return EmbeddingError(f"Ollama at {self.base_url} dropped the connection.")

    def _batch_rows(self, response: httpx2.Response, count: int) -> list[Any] | None:
        """The rows of an /api/embed answer; None when this Ollama has no /api/embed."""
        said = _error_message(response)
        if response.status_code == 404 and said is None:
            # A route the server does not know: gin's plain-text "404 page not found".
            self._legacy = True
            return None
        self._raise_for_error(response, said)
        rows = _json(response).get("embeddings")
        if not isinstance(rows, list) or len(rows) != count:
            raise EmbeddingError(f"Ollama at {self.base_url} answered without the embeddings.")
        return rows

    def _single_row(self, response: httpx2.Response) -> Any:
        said = _error_message(response)
        if response.status_code == 404 and said is None:
            raise OllamaUnreachable(
                f"Nothing at {self.base_url} answers like Ollama: it has neither "
                "/api/embed nor /api/embeddings."
            )
        self._raise_for_error(response, said)
        row = _json(response).get("embedding")
        if not isinstance(row, list) or not row:
            raise EmbeddingError(f"Ollama at {self.base_url} answered without an embedding.")
        return row

    def _raise_for_error(self, response: httpx2.Response, said: str | None) -> None:
        status = response.status_code
        if status == 200:
            return
        quoted = f": {brief(said)}" if said else ""
        if status == 404:
            # Ollama's words: `model "all-minilm" not found, try pulling it first`.
            raise OllamaModelMissing(
                f"Ollama at {self.base_url} has no model {self.model!r}{quoted}"
            )
        if 300 <= status < 400:
            raise EmbeddingError(
                f"Ollama at {self.base_url} answered with a redirect ({status}), "
                "which is not followed."
            )
        raise EmbeddingError(f"Ollama at {self.base_url} failed ({status}){quoted}")

    # --- the rows -------------------------------------------------------------------

    def _spread(self, count: int, at: list[int], rows: list[Any]) -> Vectors:
        """The answered rows at their texts' places, zero rows for blank texts."""
        if not rows:
            return np.zeros((count, self.dimension), dtype=np.float32)
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise EmbeddingError(f"Ollama at {self.base_url} answered malformed vectors.") from e
        if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
            raise EmbeddingError(f"Ollama at {self.base_url} answered malformed vectors.")
        width = matrix.shape[1]
        if self._dimension is None:
            self._dimension = width
        elif width != self._dimension:
            raise EmbeddingError(
                f"Ollama's {self.model!r} now answers {width} dimensions instead of "
                f"{self._dimension}: was the model replaced? Restart the server."
            )
        out = np.zeros((count, width), dtype=np.float32)
        out[at] = normalized(matrix)
        return out


def _batches(texts: list[str]) -> list[list[str]]:
    return [texts[i : i + BATCH_SIZE] for i in range(0, len(texts), BATCH_SIZE)]


def _json(response: httpx2.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise EmbeddingError("Ollama answered something that is not a JSON object.")
    return body


def _error_message(response: httpx2.Response) -> str | None:
    """The `error` of Ollama's JSON error body, if the answer is one."""
    if response.status_code == 200:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, str) and error else None
