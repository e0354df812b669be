"""A vector as stored on an item: float16 bytes (half the size of float32, and precise enough
for cosine ranking), with the model that made it and its dimension beside it."""

from typing import Any

import numpy as np
import numpy.typing as npt

EMBEDDING = "embedding"
EMBEDDING_MODEL = "embedding_model"
EMBEDDING_DIM = "embedding_dim"

Vector = npt.NDArray[np.float32]


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
