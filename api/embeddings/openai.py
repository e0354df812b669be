"""OpenAI's embeddings endpoint through the official SDK (AsyncOpenAI for `embed_async`,
OpenAI for `embed`): OpenAI itself, or any server speaking its wire format (vLLM, LM Studio,
Ollama's /v1, ...) through `base_url`."""

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx2
import numpy as np
import openai
from openai import AsyncOpenAI, OpenAI
from openai.types import CreateEmbeddingResponse

from api.embeddings.base import (
    PROBE_TEXT,
    EmbeddingConfigError,
    EmbeddingError,
    Vectors,
    nonblank,
    normalized,
)
from api.llm.errors import brief, scrub

DEFAULT_MODEL = "text-embedding-3-small"
OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_HOST = "api.openai.com"
# OpenAI's published sizes; any other model's is learnt by `start()`.
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
# The API's limits on one request: 2048 inputs, and 300,000 tokens summed over them. A
# token is at least one byte of UTF-8, so a batch of at most that many bytes is within it.
MAX_INPUTS = 2048
MAX_BATCH_BYTES = 300_000


class OpenAIKeyRefused(EmbeddingError):
    pass


class OpenAIModelMissing(EmbeddingError):
    pass


class OpenAIUnreachable(EmbeddingError):
    pass


class OpenAIEmbedder:
    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        if not api_key:
            raise EmbeddingConfigError(
                "MEMORY_EMBEDDING_BACKEND=openai needs an API key: set OPENAI_API_KEY."
            )
        self.model = model
        self._key = api_key
        # Given explicitly, so that the SDK never takes OPENAI_BASE_URL from the environment
        # behind the settings' back.
        url = (base_url or OPENAI_BASE_URL).rstrip("/")
        host = urlsplit(url).netloc
        self.label = "OpenAI" if host == OPENAI_HOST else f"The embedding server at {host}"
        # Two servers' models of the same name are different vector spaces.
        self._model_id = f"openai:{model}" if host == OPENAI_HOST else f"openai:{host}/{model}"
        self._dimension = KNOWN_DIMENSIONS.get(model) if host == OPENAI_HOST else None
        options: dict[str, Any] = {
            "api_key": api_key,
            "base_url": url,
            "timeout": timeout,
            "max_retries": max_retries,
        }
        # A redirect could lead past the configured URL to an internal address.
        self._client = OpenAI(
            **options, http_client=openai.DefaultHttpxClient(follow_redirects=False)
        )
        self._async_client = AsyncOpenAI(
            **options, http_client=openai.DefaultAsyncHttpxClient(follow_redirects=False)
        )

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            raise RuntimeError(
                f"The dimension of {self.model!r} is known only once {self.label} has "
                "answered: `await start()` (or embed a text) first."
            )
        return self._dimension

    async def start(self) -> None:
        """Embed one text, so that a refused key, an unknown model or an unreachable server
        shows at startup, and an unpublished model's dimension is learnt."""
        await self.embed_async([PROBE_TEXT])

    def embed(self, texts: Sequence[str]) -> Vectors:
        at = nonblank(texts)
        if not at and self._dimension is None:
            self.embed([PROBE_TEXT])
        rows: list[Vectors] = []
        for batch in _batches([texts[i] for i in at]):
            try:
                response = self._client.embeddings.create(model=self.model, input=batch)
            except (openai.OpenAIError, httpx2.HTTPError, ValueError) as e:
                raise self._error(e) from e
            rows.append(self._rows(response, len(batch)))
        return self._spread(len(texts), at, rows)

    async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        at = nonblank(texts)
        if not at and self._dimension is None:
            await self.start()
        rows: list[Vectors] = []
        for batch in _batches([texts[i] for i in at]):
            try:
                response = await self._async_client.embeddings.create(model=self.model, input=batch)
            except (openai.OpenAIError, httpx2.HTTPError, ValueError) as e:
                raise self._error(e) from e
            rows.append(self._rows(response, len(batch)))
        return self._spread(len(texts), at, rows)

    async def aclose(self) -> None:
        self._client.close()
        await self._async_client.close()

    def _rows(self, response: CreateEmbeddingResponse, count: int) -> Vectors:
        data = sorted(response.data, key=lambda item: item.index)
        try:
            matrix = np.asarray([item.embedding for item in data], dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise EmbeddingError(f"{self.label} answered malformed vectors.") from e
        if matrix.ndim != 2 or len(matrix) != count or matrix.shape[1] == 0:
            raise EmbeddingError(f"{self.label} answered {len(data)} vectors for {count} texts.")
        if not np.isfinite(matrix).all():
            raise EmbeddingError(f"{self.label} answered malformed vectors.")
        width = matrix.shape[1]
        if self._dimension is None:
            self._dimension = width
        elif width != self._dimension:
            raise EmbeddingError(
                f"{self.label} answered {width} dimensions for {self.model!r}, not the "
                f"expected {self._dimension}."
            )
        return normalized(matrix)

    def _spread(self, count: int, at: list[int], rows: list[Vectors]) -> Vectors:
        """The answered rows at their texts' places, zero rows for blank texts."""
        out = np.zeros((count, self.dimension), dtype=np.float32)
        if rows:
            out[at] = np.concatenate(rows)
        return out

    def _error(self, e: Exception) -> EmbeddingError:
        """What an exception of the SDK or its HTTP client means, in words for the person
        who configured the backend. The key is never quoted, not even the server's echo."""
        label = self.label
        if isinstance(e, openai.AuthenticationError | openai.PermissionDeniedError):
            return OpenAIKeyRefused(f"{label} refused the API key ({e.status_code}).")
        if isinstance(e, openai.RateLimitError):
            return EmbeddingError(
                f"{label} is rate limiting this key; retried, then gave up{self._said(e)}"
            )
        if isinstance(e, openai.APITimeoutError):
            return EmbeddingError(f"{label} did not answer in time.")
        if isinstance(e, openai.APIConnectionError):
            return OpenAIUnreachable(f"{label} cannot be reached.")
        if isinstance(e, openai.NotFoundError):
            if _is_model_missing(e):
                return OpenAIModelMissing(
                    f"{label} has no embedding model {self.model!r}{self._said(e)}"
                )
            return OpenAIUnreachable(
                f"{label} has no embeddings endpoint at {e.request.url} (404)."
            )
        if isinstance(e, openai.APIStatusError):
            status = e.status_code
            if 300 <= status < 400:
                return EmbeddingError(f"{label} answered with a redirect, which is not followed.")
            verb = "failed" if status >= 500 else "refused the request"
            return EmbeddingError(f"{label} {verb} ({status}){self._said(e)}")
        if isinstance(e, httpx2.TimeoutException):
            return EmbeddingError(f"{label} did not answer in time.")
        if isinstance(e, httpx2.TransportError):
            return OpenAIUnreachable(f"{label} dropped the connection.")
        if isinstance(e, ValueError):  # the SDK's word for an answer without vectors
            return EmbeddingError(f"{label} answered without embeddings.")
        return EmbeddingError(f"{label} failed.")

    def _said(self, e: openai.APIStatusError) -> str:
        """The server's own message from a JSON error body, shortened, with the key (which
        some servers echo) cut out."""
        body = e.body
        message = body.get("message") if isinstance(body, dict) else None
        if not isinstance(message, str) or not message:
            return "."
        return ": " + brief(scrub(message, [self._key]))


def _is_model_missing(e: openai.NotFoundError) -> bool:
    """OpenAI's unknown model: code `model_not_found`; other servers say it in words. A
    404 without a JSON error body is a wrong URL instead."""
    body = e.body
    if not isinstance(body, dict):
        return False
    message = body.get("message")
    return body.get("code") == "model_not_found" or (
        isinstance(message, str) and "model" in message.lower()
    )


def _batches(texts: list[str]) -> list[list[str]]:
    """The texts in request-sized batches: at most MAX_INPUTS, at most MAX_BATCH_BYTES."""
    batches: list[list[str]] = []
    current: list[str] = []
    size = 0
    for text in texts:
        length = len(text.encode("utf-8"))
        if current and (len(current) == MAX_INPUTS or size + length > MAX_BATCH_BYTES):
            batches.append(current)
            current, size = [], 0
        current.append(text)
        size += length
    if current:
        batches.append(current)
    return batches
