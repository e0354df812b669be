"""The shipped transformer (all-MiniLM-L6-v2 in int8 ONNX): the Embedder contract, what it
makes of odd texts, that it reads paraphrases a static model cannot, its load off the
event loop, and the sha256 pins that guard its files. (That it agrees with
sentence-transformers' fp32 encoding is checked where torch is installed: by
tools/build_onnx_model.py.)"""

import asyncio
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from api.embeddings.base import EmbeddingConfigError
from api.embeddings.onnx import MODEL_DIR, MODEL_FILES, SHIPPED_SHA256, OnnxEmbedder, read_config

TEXTS = [
    "I love pizza with extra mozzarella.",
    "The user prefers short answers and dark mode.",
    "Remember: my daughter's birthday is on March 3rd!",
    "naïve café, Ñandú",
    "東京は日本の首都です。",
    "",
    "?!",
    "ERROR 500 (req_id=ab12-cd34) at https://example.com/x?y=1",
]


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder()


@pytest.fixture
def model_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "onnx_model"
    shutil.copytree(MODEL_DIR, copy)
    return copy


def test_names_its_model_and_dimension(embedder: OnnxEmbedder) -> None:
    assert embedder.model_id == "onnx:all-minilm-l6-v2-onnx-int8"
    assert embedder.dimension == 384


def test_rows_are_unit_length_float32_and_blank_texts_zero(embedder: OnnxEmbedder) -> None:
    rows = embedder.embed(TEXTS)
    assert rows.shape == (len(TEXTS), 384)
    assert rows.dtype == np.float32
    norms = np.linalg.norm(rows, axis=1)
    blank = [i for i, text in enumerate(TEXTS) if not text.strip()]
    assert blank == [5]
    assert norms[5] == 0
    assert np.allclose(np.delete(norms, blank), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_a_batch_equals_its_texts_one_by_one(embedder: OnnxEmbedder) -> None:
    """A vector depends on its text alone: replicas, re-embedding and the cache of recent
    vectors rely on it (int8 dynamic quantization would break it in padded batches)."""
    together = embedder.embed(TEXTS)
    alone = np.vstack([embedder.embed([text]) for text in TEXTS])
    assert np.array_equal(together, alone)


async def test_embed_async_equals_embed(embedder: OnnxEmbedder) -> None:
    assert np.array_equal(await embedder.embed_async(TEXTS), embedder.embed(TEXTS))


def test_only_the_first_256_tokens_count(embedder: OnnxEmbedder) -> None:
    head = " ".join(["alpha"] * 100)  # 100 tokens
    a, b = embedder.embed([head + " apples" * 300, head + " pears" * 300])
    assert float(a @ b) < 1.0
    c, d = embedder.embed([f"{head} {head} {head} apples", f"{head} {head} {head} pears"])
    assert np.array_equal(c, d)  # both cut before the last word


def test_reads_a_paraphrase_among_everyday_notes(embedder: OnnxEmbedder) -> None:
    """ "what food do I like?" nearer the pizza than to notes that share its shape ("the
    car needs..."), which a static model barely tells apart (0.253 against 0.252)."""
    notes = [
        "I love pizza with extra mozzarella.",
        "The car needs new tyres before winter.",
        "The garden needs watering twice a week.",
        "Buy a birthday card for Sam.",
        "My passport expires next spring.",
    ]
    rows = embedder.embed(notes)
    for question in ("what food do I like?", "favourite food", "what do I enjoy eating?"):
        cosines = rows @ embedder.embed([question])[0]
        assert int(np.argmax(cosines)) == 0, (question, cosines)


async def test_concurrent_first_embeddings_share_one_load() -> None:
    embedder = OnnxEmbedder()
    await embedder.start()  # the shipped model: returns at once, the load runs in a thread
    rows = await asyncio.gather(*(embedder.embed_async([t]) for t in TEXTS[:3]))
    assert [r.shape for r in rows] == [(1, 384)] * 3
    assert np.array_equal(np.vstack(rows), embedder.embed(TEXTS[:3]))
    await embedder.aclose()


def test_the_shipped_files_match_their_pins() -> None:
    for name in MODEL_FILES:
        digest = hashlib.sha256((MODEL_DIR / name).read_bytes()).hexdigest()
        assert digest == SHIPPED_SHA256[name], name
    assert (MODEL_DIR / "LICENSE").is_file()
    assert "Apache License" in (MODEL_DIR / "NOTICE").read_text()


def test_a_users_directory_is_unpinned_and_names_its_model(model_copy: Path) -> None:
    config = json.loads((model_copy / "config.json").read_text())
    config["model_id"] = "my-own-minilm"
    (model_copy / "config.json").write_text(json.dumps(config))
    embedder = OnnxEmbedder(path=model_copy)
    assert embedder.model_id == "onnx:my-own-minilm"
    assert embedder.embed(["hello"]).shape == (1, 384)


def test_a_missing_file_is_named(model_copy: Path) -> None:
    (model_copy / "model.onnx").unlink()
    with pytest.raises(EmbeddingConfigError, match=r"has no model\.onnx"):
        OnnxEmbedder(path=model_copy)


def test_a_damaged_model_is_refused_when_loaded(model_copy: Path) -> None:
    (model_copy / "model.onnx").write_bytes(b"not an onnx model")
    embedder = OnnxEmbedder(path=model_copy)  # the files are there: checked at the load
    with pytest.raises(EmbeddingConfigError, match="unreadable"):
        embedder.embed(["hello"])


async def test_a_damaged_model_of_ones_own_stops_the_start(model_copy: Path) -> None:
    (model_copy / "model.onnx").write_bytes(b"not an onnx model")
    embedder = OnnxEmbedder(path=model_copy)
    with pytest.raises(EmbeddingConfigError, match="unreadable"):
        await embedder.start()


def test_a_file_that_differs_from_its_pin_is_named_with_both_digests(model_copy: Path) -> None:
    (model_copy / "tokenizer.json").write_text("{}")
    pins = dict(SHIPPED_SHA256)
    with pytest.raises(EmbeddingConfigError, match=r"tokenizer\.json has sha256 .*not the pinned"):
        read_config(model_copy, pins)


def test_an_unreadable_config_is_refused(model_copy: Path) -> None:
    (model_copy / "config.json").write_text('{"model_id": "x"}')  # no dimension
    with pytest.raises(EmbeddingConfigError, match="unreadable"):
        OnnxEmbedder(path=model_copy)
