"""A vector as stored on an item: float16 bytes (half the size of float32, and precise enough
for cosine ranking), with the model that made it and its dimension beside it; and as an index
holds many of them: int8 with a scale per row (`Quantized`)."""

import functools
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from api.kit import cores

EMBEDDING = "embedding"
EMBEDDING_MODEL = "embedding_model"
EMBEDDING_DIM = "embedding_dim"

Vector = npt.NDArray[np.float32]
StoredVector = npt.NDArray[np.float16]  # as an item holds it
CODE_MAX = 127  # int8 codes run from -CODE_MAX to CODE_MAX
BLOCK_BYTES = 1 << 20  # rows widened to float32 at a time for a product: about 1 MiB
PARALLEL_ROWS = 25_000  # rows each core takes at least, for a product shared between cores


def pack(vector: Vector) -> bytes:
    return np.asarray(vector, dtype="<f2").tobytes()


def unpack(data: bytes, dimension: int) -> Vector | None:
    """None for bytes that do not hold `dimension` float16 values (a damaged item)."""
    if len(data) != 2 * dimension:
        return None
    return np.frombuffer(data, dtype="<f2").astype(np.float32)


def attributes(vector: Vector | None, model_id: str | None) -> dict[str, Any]:
    """The item attributes that carry a vector; none without one."""
    if vector is None or model_id is None:
        return {}
    return {EMBEDDING: pack(vector), EMBEDDING_MODEL: model_id, EMBEDDING_DIM: int(vector.shape[0])}


def of_item(item: dict[str, Any], model_id: str | None) -> Vector | None:
    """The item's vector if `model_id` made it: another model's vector is never used."""
    if model_id is None or item.get(EMBEDDING_MODEL) != model_id:
        return None
    data, dimension = item.get(EMBEDDING), item.get(EMBEDDING_DIM)
    if not isinstance(data, bytes | bytearray) or not isinstance(dimension, int):
        return None
    return unpack(bytes(data), dimension)


def stored(item: dict[str, Any], model_id: str | None) -> StoredVector | None:
    """`of_item`, as the float16 values the item holds (no copy): what an index load reads
    of a vector before it quantizes it."""
    if model_id is None or item.get(EMBEDDING_MODEL) != model_id:
        return None
    data, dimension = item.get(EMBEDDING), item.get(EMBEDDING_DIM)
    if not isinstance(data, bytes | bytearray) or not isinstance(dimension, int):
        return None
    if len(data) != 2 * dimension:
        return None
    return np.frombuffer(data, dtype="<f2")


class Quantized:
    """Vectors held as int8 codes with a float32 scale per row (`scale * codes` is the
    vector): a quarter of float32's memory. A cosine is within about 0.0007 of float32's on
    average (0.006 at most; rankings measured in docs/search.md). Rows are widened to
    float32 a block at a time, in cache, for BLAS.

    Quantizing is exact on its own output: the vectors of `rows` quantize to the same codes
    and scales again, so a document moved between segments (or rebuilt) scores the same."""

    def __init__(self, count: int, dimension: int) -> None:
        self.codes = np.zeros((count, dimension), dtype=np.int8)
        self.scales = np.zeros(count, dtype=np.float32)

    def __len__(self) -> int:
        return len(self.scales)

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + self.scales.nbytes

    def put(self, at: npt.NDArray[np.intp] | slice | int, vectors: npt.ArrayLike) -> None:
        """Quantize vectors (one per row, any float type) into rows `at`."""
        if isinstance(at, int):
            at = slice(at, at + 1)
        rows = np.asarray(vectors, dtype=np.float32).reshape(-1, self.codes.shape[1])
        scales = _scales(np.abs(rows).max(axis=1, initial=0.0))
        divisor = np.where(scales > 0, scales, np.float32(1))
        codes = np.rint(rows / divisor[:, None])
        self.codes[at] = np.clip(codes, -CODE_MAX, CODE_MAX).astype(np.int8)
        self.scales[at] = scales

    def copy_from(self, at: int, source: "Quantized", rows: npt.NDArray[np.intp]) -> None:
        """Rows `rows` of `source` into rows at..., as they are."""
        self.codes[at : at + len(rows)] = source.codes[rows]
        self.scales[at : at + len(rows)] = source.scales[rows]

    def vector(self, row: int) -> Vector:
        vector: Vector = self.codes[row].astype(np.float32) * self.scales[row]
        return vector

    def grown(self, count: int) -> "Quantized":
        bigger = Quantized(count, self.codes.shape[1])
        bigger.codes[: len(self)] = self.codes
        bigger.scales[: len(self)] = self.scales
        return bigger

    def cosines(self, query: Vector, count: int) -> npt.NDArray[np.float64]:
        """Dot products of the first `count` rows with `query` (cosines, for unit vectors).

        The query is rounded to whole steps of its own scale too (as many as keep every sum
        under 2**24: 515 each side at 256 dimensions, 343 at 384): every product and sum is a whole
        number, exact in float32 whatever order BLAS adds in, so a row scores the same in
        any block, segment or share. Past PARALLEL_ROWS rows, each core takes a share
        (numpy lets go of the GIL): widening int8 to float32 costs more than the product."""
        out = np.empty(count, dtype=np.float32)
        query = np.asarray(query, dtype=np.float32)
        dimension = max(self.codes.shape[1], 1)
        levels = max(1, (2**24 - 1) // (CODE_MAX * dimension))
        peak = float(np.abs(query).max(initial=0.0))
        step = np.float32(peak / levels) if peak > 0 else np.float32(1)
        query = np.rint(query / step).astype(np.float32)
        parts = min(_cores(), count // PARALLEL_ROWS) if count >= 2 * PARALLEL_ROWS else 1
        if parts > 1:
            bounds = [count * k // parts for k in range(parts + 1)]
            spans = list(itertools.pairwise(bounds))
            list(_pool().map(lambda span: self._dot(query, span[0], span[1], out), spans))
        else:
            self._dot(query, 0, count, out)
        out *= self.scales[:count]
        out *= step
        return out.astype(np.float64)

    def _dot(self, query: Vector, start: int, end: int, out: npt.NDArray[np.float32]) -> None:
        """out[start:end] = rows start..end · query, a block of rows widened at a time."""
        dimension = self.codes.shape[1]
        step = max(1, BLOCK_BYTES // (4 * max(dimension, 1)))
        block = _block(step * dimension).reshape(step, dimension)
        for at in range(start, end, step):
            upto = min(at + step, end)
            rows = block[: upto - at]
            np.copyto(rows, self.codes[at:upto], casting="safe")
            np.matmul(rows, query, out=out[at:upto])


_blocks = threading.local()


def _block(size: int) -> npt.NDArray[np.float32]:
    """This thread's float32 buffer of `size` values (kept: a fresh one each product would
    be paged in again each time)."""
    block: npt.NDArray[np.float32] | None = getattr(_blocks, "block", None)
    if block is None or len(block) < size:
        block = _blocks.block = np.empty(size, dtype=np.float32)
    return block[:size]


@functools.cache
def _cores() -> int:
    return cores.usable_cores()


@functools.cache
def _pool() -> ThreadPoolExecutor:
    """Threads for the shares of one product, one per core, made on first use."""
    return ThreadPoolExecutor(_cores(), thread_name_prefix="search-vectors")


def _scales(peaks: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """A scale per row that makes its largest value CODE_MAX; among a float32 and its
    neighbours, one that `CODE_MAX * scale / CODE_MAX` gives back exactly (nearly every
    float32 is one; every one has such a neighbour), so quantizing a quantized vector
    changes nothing."""
    scales = (peaks / np.float32(CODE_MAX)).astype(np.float32)
    fixed = _round_trip(scales) == scales
    if not fixed.all():
        up = np.nextafter(scales, np.float32(np.inf))
        down = np.nextafter(scales, np.float32(0))
        scales = np.where(fixed, scales, np.where(_round_trip(up) == up, up, down))
    return scales


def _round_trip(scales: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """The scale a vector quantized with `scales` gets when quantized again."""
    peak = (scales * np.float32(CODE_MAX)).astype(np.float32)
    return (peak / np.float32(CODE_MAX)).astype(np.float32)
