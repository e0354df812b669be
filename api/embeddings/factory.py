"""The one chooser of embedding backends. Each backend's module is imported only when it is
chosen, so that a server on Ollama never loads torch, and one on `none` loads nothing."""

from pathlib import Path
from typing import Any, Protocol, get_args, runtime_checkable

from api.config import EmbeddingBackend, Settings
from api.embeddings.base import PROBE_TEXT, Embedder, EmbeddingConfigError, EmbeddingError

KINDS: tuple[str, ...] = get_args(EmbeddingBackend)


@runtime_checkable
class Startable(Protocol):
    async def start(self) -> None: ...


def get_embedding_backend(kind: str, **options: Any) -> Embedder | None:
    """Seed 002's factory: the backend named `kind`, built with `options` (its constructor's
    keyword arguments), or None for `none` (lexical search only)."""
    name = kind.strip().lower()
    if name == "none":
        return None
    if name == "onnx":
        from api.embeddings.onnx import OnnxEmbedder

        return OnnxEmbedder(**options)
    if name == "static":
        from api.embeddings.static import StaticEmbedder

        return StaticEmbedder(**options)
    if name == "local":
        from api.embeddings.local import LocalEmbedder

        return LocalEmbedder(**options)
    if name == "ollama":
        from api.embeddings.ollama import OllamaEmbedder

        return OllamaEmbedder(**options)
    if name == "openai":
        from api.embeddings.openai import OpenAIEmbedder

        return OpenAIEmbedder(**options)
    raise EmbeddingConfigError(
        f"MEMORY_EMBEDDING_BACKEND={kind!r} is not an embedding backend; "
        f"choose one of: {', '.join(KINDS)}."
    )


def backend_options(settings: Settings) -> dict[str, Any]:
    """The chosen backend's constructor arguments from the settings; an unset
    MEMORY_EMBEDDING_MODEL leaves the backend's own default."""
    kind = settings.memory_embedding_backend
    model = settings.memory_embedding_model
    options: dict[str, Any] = {}
    if kind in ("onnx", "static"):
        if model:
            options["path"] = Path(model)
    elif kind == "local":
        options["allow_download"] = settings.memory_embedding_allow_download
    elif kind == "ollama":
        options["base_url"] = str(settings.ollama_base_url).rstrip("/")
    elif kind == "openai":
        key = settings.openai_api_key
        options["api_key"] = key.get_secret_value() if key else None
        if settings.openai_base_url is not None:
            options["base_url"] = str(settings.openai_base_url).rstrip("/")
    if model and kind in ("local", "ollama", "openai"):
        options["model"] = model
    return options


async def start_embedder(settings: Settings) -> Embedder | None:
    """The configured backend, asked once (a text embedded, or its model loaded), so that a
    server that cannot embed says why at startup: EmbeddingConfigError naming the
    setting to change and what to install or run."""
    kind = settings.memory_embedding_backend
    embedder = get_embedding_backend(kind, **backend_options(settings))
    if embedder is None:
        return None
    try:
        if isinstance(embedder, Startable):
            await embedder.start()
        else:
            await embedder.embed_async([PROBE_TEXT])
    except EmbeddingError as e:
        await embedder.aclose()
        raise EmbeddingConfigError(_start_failure(settings, e)) from e
    except BaseException:
        await embedder.aclose()
        raise
    return embedder


def _start_failure(settings: Settings, e: EmbeddingError) -> str:
    kind = settings.memory_embedding_backend
    said = f"MEMORY_EMBEDDING_BACKEND={kind} cannot start: {e.message}"
    if kind == "ollama":
        from api.embeddings import ollama

        url = str(settings.ollama_base_url).rstrip("/")
        model = settings.memory_embedding_model or ollama.DEFAULT_MODEL
        if isinstance(e, ollama.OllamaUnreachable):
            return (
                f"{said} Start Ollama (`ollama serve`), or set OLLAMA_BASE_URL to where it "
                f"runs (now {url})."
            )
        if isinstance(e, ollama.OllamaModelMissing):
            return (
                f"{said} Run `ollama pull {model}`, or set MEMORY_EMBEDDING_MODEL to an "
                "embedding model this Ollama has (`ollama list`)."
            )
        return f"{said} Check OLLAMA_BASE_URL (now {url}) and MEMORY_EMBEDDING_MODEL."
    if kind == "openai":
        from api.embeddings import openai

        if isinstance(e, openai.OpenAIKeyRefused):
            return f"{said} Check OPENAI_API_KEY."
        if isinstance(e, openai.OpenAIModelMissing):
            return (
                f"{said} Set MEMORY_EMBEDDING_MODEL to an embedding model the server has "
                f"(unset: {openai.DEFAULT_MODEL})."
            )
        if isinstance(e, openai.OpenAIUnreachable):
            where = settings.openai_base_url or openai.OPENAI_BASE_URL
            return f"{said} Check OPENAI_BASE_URL (now {where}) and the network."
        return f"{said} Check OPENAI_API_KEY, OPENAI_BASE_URL and MEMORY_EMBEDDING_MODEL."
    return f"{said} Check MEMORY_EMBEDDING_MODEL, or choose another MEMORY_EMBEDDING_BACKEND."
