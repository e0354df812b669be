"""Fake Ollama and OpenAI embedding servers: fake outside services, for tests only.

Each serves real HTTP on 127.0.0.1 from a background thread in the service's real wire
format, so the adapters (httpx2 for Ollama, the official `openai` SDK) run unchanged:

    with start_fake_ollama() as ollama:            # /api/embed, /api/embeddings, /api/tags
        OllamaEmbedder(base_url=ollama.base_url)
    with start_fake_openai_embeddings() as server:  # POST /v1/embeddings, GET /v1/models
        OpenAIEmbedder(api_key="k", base_url=server.base_url)

Vectors are deterministic: drawn from a hash of the model and the text, so a text gets the
same vector on every call and from either Ollama endpoint (before normalisation: Ollama's
/api/embed answers unit vectors, its older /api/embeddings raw ones). Every request is
recorded. Knobs, changeable at any time: `legacy` (an Ollama from before /api/embed),
`fail_status` (the next requests fail with the service's error body), the served models.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.fakes.llm_servers import BAD_KEY, _openai_auth_error, _openai_error
from tests.fakes.serving import serve_in_thread

__all__ = [
    "BAD_KEY",
    "OLLAMA_MODELS",
    "OPENAI_MODELS",
    "FakeEmbeddingServer",
    "fake_vector",
    "ollama_model_missing",
    "start_fake_ollama",
    "start_fake_openai_embeddings",
]

# Served models and their dimensions (the real ones' sizes, and a small custom model).
OLLAMA_MODELS = {"all-minilm:latest": 384, "nomic-embed-text:latest": 768}
OPENAI_MODELS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "tiny-embed": 8,
}
OPENAI_MAX_INPUTS = 2048
# Ollama answers routes it does not know with gin's default, a plain-text 404.
GIN_NOT_FOUND = "404 page not found"
MODIFIED_AT = "2024-05-10T18:50:49.123456789Z"


@dataclass
class FakeEmbeddingServer:
    """The running fake's address and state; a test may change its fields at any time."""

    # What the adapter gets as base_url (Ollama: the root; OpenAI: ".../v1").
    base_url: str
    # Model name to dimension.
    models: dict[str, int]
    # Ollama only: behave like an Ollama from before /api/embed (0.3), which answers it
    # with gin's plain-text 404.
    legacy: bool = False
    # Anything but None: the embedding endpoints answer with this status and the
    # service's error body.
    fail_status: int | None = None
    # (path, JSON body) of every request to an embedding endpoint, rejected ones too.
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # Their headers, lower-cased names, in the same order.
    request_headers: list[dict[str, str]] = field(default_factory=list)

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [body for p, body in self.requests if p == path]


def fake_vector(model: str, text: str, dimension: int) -> npt.NDArray[np.float32]:
    """A raw (not normalised) vector that depends only on the model and the text."""
    seed = int.from_bytes(hashlib.sha256(f"{model}\x00{text}".encode()).digest()[:8], "little")
    return (np.random.default_rng(seed).standard_normal(dimension) * 3.0).astype(np.float32)


def _unit(vector: npt.NDArray[np.float32]) -> list[float]:
    return [float(x) for x in vector / np.linalg.norm(vector)]


async def _record(server: FakeEmbeddingServer, request: Request) -> dict[str, Any] | None:
    try:
        body = await request.json()
    except ValueError:
        body = None
    server.requests.append((request.url.path, body if isinstance(body, dict) else {}))
    server.request_headers.append({k.lower(): v for k, v in request.headers.items()})
    return body if isinstance(body, dict) else None


# --- Ollama -----------------------------------------------------------------------------


def _ollama_error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def ollama_model_missing(model: str) -> str:
    """Ollama's words for a model it has not pulled (server/routes.go, handleScheduleError),
    answered with 404 by /api/embed and /api/embeddings alike."""
    return f'model "{model}" not found, try pulling it first'


def _ollama_model(server: FakeEmbeddingServer, name: object) -> str | None:
    """The served model a request names: "all-minilm" is "all-minilm:latest"."""
    if not isinstance(name, str) or not name:
        return None
    full = name if ":" in name else f"{name}:latest"
    return full if full in server.models else None


def _ollama_app(server: FakeEmbeddingServer) -> Starlette:
    async def embed(request: Request) -> Response:
        started = time.perf_counter_ns()
        body = await _record(server, request)
        if server.legacy:
            return PlainTextResponse(GIN_NOT_FOUND, status_code=404)
        if body is None:
            return _ollama_error(400, "missing request body")
        if not isinstance(body.get("model"), str) or not body["model"]:
            return _ollama_error(400, "model is required")
        raw = body.get("input")
        if isinstance(raw, str):
            texts = [raw] if raw else []
        elif isinstance(raw, list) and all(isinstance(t, str) for t in raw):
            texts = list(raw)
        elif raw is None:
            texts = []
        else:
            return _ollama_error(400, "invalid input type")
        model = _ollama_model(server, body["model"])
        if model is None:
            return _ollama_error(404, ollama_model_missing(body["model"]))
        if server.fail_status is not None:
            return _ollama_error(server.fail_status, "llama runner process has terminated")
        dimension = server.models[model]
        return JSONResponse(
            {
                "model": body["model"],
                "embeddings": [_unit(fake_vector(model, t, dimension)) for t in texts],
                "total_duration": time.perf_counter_ns() - started,
                "load_duration": 1000,
                "prompt_eval_count": sum(len(t.split()) + 2 for t in texts),
            }
        )

    async def embeddings(request: Request) -> Response:
        body = await _record(server, request)
        if body is None:
            return _ollama_error(400, "missing request body")
        if not isinstance(body.get("model"), str) or not body["model"]:
            return _ollama_error(400, "model is required")
        model = _ollama_model(server, body["model"])
        if model is None:
            return _ollama_error(404, ollama_model_missing(body["model"]))
        if server.fail_status is not None:
            return _ollama_error(server.fail_status, "llama runner process has terminated")
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not prompt:
            return JSONResponse({"embedding": []})  # "an empty request loads the model"
        vector = fake_vector(model, prompt, server.models[model])
        return JSONResponse({"embedding": [float(x) for x in vector]})

    async def tags(request: Request) -> Response:
        models = [
            {
                "name": name,
                "model": name,
                "modified_at": MODIFIED_AT,
                "size": 45_960_996,
                "digest": hashlib.sha256(name.encode()).hexdigest(),
                "details": {
                    "parent_model": "",
                    "format": "gguf",
                    "family": "bert",
                    "families": ["bert"],
                    "parameter_size": "23M",
                    "quantization_level": "F16",
                },
            }
            for name in server.models
        ]
        return JSONResponse({"models": models})

    async def not_found(request: Request, exc: Exception) -> Response:
        return PlainTextResponse(GIN_NOT_FOUND, status_code=404)

    return Starlette(
        routes=[
            Route("/api/embed", embed, methods=["POST"]),
            Route("/api/embeddings", embeddings, methods=["POST"]),
            Route("/api/tags", tags),
        ],
        exception_handlers={404: not_found, HTTPException: not_found},
    )


# --- OpenAI -----------------------------------------------------------------------------


def _openai_input(raw: object) -> list[str] | str:
    """The texts of an embeddings request, or OpenAI's complaint about them."""
    invalid = (
        "'$.input' is invalid. Please check the API reference: "
        "https://platform.openai.com/docs/api-reference."
    )
    if isinstance(raw, str):
        return [raw] if raw else invalid
    if not isinstance(raw, list) or not raw or not all(isinstance(t, str) and t for t in raw):
        return invalid
    if len(raw) > OPENAI_MAX_INPUTS:
        return f"Invalid 'input': maximum array size is {OPENAI_MAX_INPUTS}, got {len(raw)}."
    return list(raw)


def _openai_app(server: FakeEmbeddingServer) -> Starlette:
    async def embeddings(request: Request) -> Response:
        body = await _record(server, request)
        if body is None:
            return _openai_error(400, "We could not parse the JSON body of your request.")
        if (auth_error := _openai_auth_error(request)) is not None:
            return auth_error
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return _openai_error(400, "you must provide a model parameter")
        texts = _openai_input(body.get("input"))
        if isinstance(texts, str):
            return _openai_error(400, texts, code="invalid_value")
        if model not in server.models:
            return _openai_error(
                404,
                f"The model `{model}` does not exist or you do not have access to it.",
                code="model_not_found",
            )
        if server.fail_status is not None:
            return _openai_error(server.fail_status, "The server had an error while processing.")
        dimension = server.models[model]
        wanted = body.get("dimensions")
        if isinstance(wanted, int) and 0 < wanted < dimension:
            dimension = wanted  # the API shortens, then renormalises
        encoding = body.get("encoding_format", "float")
        if encoding not in ("float", "base64"):
            return _openai_error(400, f"Invalid value for 'encoding_format': {encoding!r}.")
        data = []
        for index, text in enumerate(texts):
            vector = np.asarray(_unit(fake_vector(model, text, server.models[model])[:dimension]))
            data.append(
                {
                    "object": "embedding",
                    "index": index,
                    # base64: the little-endian float32 bytes, as the API sends them.
                    "embedding": (
                        base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
                        if encoding == "base64"
                        else [float(x) for x in vector]
                    ),
                }
            )
        tokens = sum(len(t.split()) for t in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def models(request: Request) -> Response:
        if (auth_error := _openai_auth_error(request)) is not None:
            return auth_error
        data = [
            {"id": name, "object": "model", "created": 1_705_953_180, "owned_by": "system"}
            for name in server.models
        ]
        return JSONResponse({"object": "list", "data": data})

    return Starlette(
        routes=[
            Route("/v1/embeddings", embeddings, methods=["POST"]),
            Route("/v1/models", models),
        ]
    )


# --- Running ----------------------------------------------------------------------------


@contextmanager
def start_fake_ollama(*, legacy: bool = False) -> Iterator[FakeEmbeddingServer]:
    """A fake Ollama on a free port of 127.0.0.1 for the block; `base_url` is its root."""

    def build(root: str) -> tuple[FakeEmbeddingServer, Starlette]:
        server = FakeEmbeddingServer(base_url=root, models=dict(OLLAMA_MODELS), legacy=legacy)
        return server, _ollama_app(server)

    with serve_in_thread("fake-ollama", build, "/api/tags") as server:
        yield server


@contextmanager
def start_fake_openai_embeddings() -> Iterator[FakeEmbeddingServer]:
    """A fake OpenAI embeddings API on a free port of 127.0.0.1 for the block; `base_url`
    ends in /v1, as the SDK expects."""

    def build(root: str) -> tuple[FakeEmbeddingServer, Starlette]:
        server = FakeEmbeddingServer(base_url=root + "/v1", models=dict(OPENAI_MODELS))
        return server, _openai_app(server)

    probe = {"authorization": "Bearer probe"}
    with serve_in_thread("fake-openai-embeddings", build, "/v1/models", probe_headers=probe) as s:
        yield s
