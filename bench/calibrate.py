"""Where a backend's similarity floor belongs, read from labelled pairs.

bench/recall_data/pairs.json (described in its README) holds (query, text) pairs written
for this and for nothing else: `related` when the text answers the query or says what it
asks for, unrelated otherwise, and among the unrelated ones `near` when the text is on the
query's topic without answering it (a hard negative: "The dog needs his worming tablet" for
"what's my dog called?"). None of its texts is a note of the recall sets and none of its
queries one of their questions, so a floor chosen here is not chosen on the evaluation.

For each backend (`--backends`, default `static`; any name the engine's factory knows),
every query and text is embedded one at a time, as the engine embeds them, and each pair's
cosine taken. Printed: the cosines of related, unrelated and near-topic unrelated pairs
(min, p5, p25, median, p75, p95, max); for each floor from 0.10 to 0.50 in steps of 0.01
(a pair passes when its cosine is at least the floor, as in the search index) the share of
related pairs kept, of unrelated and of near-topic pairs admitted, and the precision and
F1 of the related pairs; then the floors three rules choose:

- `keep 95%`: the highest floor that keeps at least 95% of the related pairs;
- `best F1`: the floor with the best F1, the highest among equals;
- `Youden`: the floor where kept minus admitted is largest, the highest among equals.

Precision and F1 count the pairs as they are, one related to two unrelated; the shares kept
and admitted do not depend on that mix.

    uv run python bench/calibrate.py [--backends static,onnx] [--json]

Exits 2 when the pairs are invalid.
"""

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from bench.recall import DATA, load_data, load_notes, names, same_text, started
from bench.report import Report

FLOORS = tuple(round(0.10 + 0.01 * i, 2) for i in range(41))  # 0.10 to 0.50
KEEP = 0.95  # the share of related pairs the `keep 95%` rule keeps
QUANTILES: tuple[tuple[str, int], ...] = (
    ("min", 0),
    ("p5", 5),
    ("p25", 25),
    ("median", 50),
    ("p75", 75),
    ("p95", 95),
    ("max", 100),
)


class Pair(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    query: str
    text: str
    related: bool
    near: bool  # unrelated, but on the query's topic


class Pairs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    pairs: tuple[Pair, ...]


def load_pairs(directory: Path = DATA) -> list[Pair]:
    return list(Pairs.model_validate_json((directory / "pairs.json").read_bytes()).pairs)


def pair_problems(pairs: Sequence[Pair], directory: Path = DATA) -> list[str]:
    """Everything wrong with the pairs, one line each; empty when they are valid. Besides
    their own shape, they must stay apart from the recall sets' notes and questions."""
    found: list[str] = []
    seen: set[tuple[str, str]] = set()
    for n, pair in enumerate(pairs, 1):
        where = f"pair {pair.id}"
        if pair.id != f"c{n:03d}":
            found.append(f"{where} should be c{n:03d}")
        if not pair.query.strip() or not pair.text.strip():
            found.append(f"{where}: query and text must not be empty")
        if pair.related and pair.near:
            found.append(f"{where}: a related pair cannot also be a near (unrelated) one")
        key = (same_text(pair.query), same_text(pair.text))
        if key in seen:
            found.append(f"{where} repeats an earlier pair")
        seen.add(key)
    for query in dict.fromkeys(p.query for p in pairs):
        labels = {p.related for p in pairs if p.query == query}
        if labels != {True, False}:
            found.append(f"query {query!r} needs both related and unrelated texts")

    sets = load_notes(directory)
    _, conversation_questions = load_data(directory)
    notes = {same_text(n.text): n.id for n in sets.notes}
    asked = {same_text(q.question): q.id for q in sets.paraphrase}
    asked |= {same_text(u.question): u.id for u in sets.unrelated}
    asked |= {same_text(q.question): q.id for q in conversation_questions}
    for pair in pairs:
        if (note := notes.get(same_text(pair.text))) is not None:
            found.append(f"pair {pair.id}: its text is note {note} of the recall sets")
        if (question := asked.get(same_text(pair.query))) is not None:
            found.append(f"pair {pair.id}: its query is question {question} of the recall sets")
    return found


def validated_pairs(directory: Path = DATA) -> list[Pair]:
    pairs = load_pairs(directory)
    found = pair_problems(pairs, directory)
    if found:
        print(f"{directory / 'pairs.json'} is invalid:", *found, sep="\n  ", file=sys.stderr)
        raise SystemExit(2)
    return pairs


# --- measuring ------------------------------------------------------------------------


async def cosines(backend: str, pairs: Sequence[Pair]) -> tuple[str, list[float]] | None:
    """The backend's model id and each pair's cosine under it, or None when it has no
    vectors (`none`)."""
    embedder = await started(backend)
    if embedder is None:
        return None
    try:
        texts = list(dict.fromkeys(t for p in pairs for t in (p.query, p.text)))
        vectors = {t: (await embedder.embed_async([t]))[0] for t in texts}
    finally:
        await embedder.aclose()
    return embedder.model_id, [float(np.dot(vectors[p.query], vectors[p.text])) for p in pairs]


@dataclass(frozen=True)
class AtFloor:
    floor: float
    kept: float  # the share of related pairs at or above the floor
    admitted: float  # the share of unrelated pairs at or above it
    near: float  # the share of near-topic unrelated pairs at or above it
    precision: float  # of the pairs at or above it, the share that are related
    f1: float


@dataclass(frozen=True)
class Calibration:
    backend: str
    model_id: str
    related: list[float]
    unrelated: list[float]
    near: list[float]  # the unrelated pairs on the query's topic

    def at(self, floor: float) -> AtFloor:
        def share(values: Sequence[float]) -> float:
            return sum(v >= floor for v in values) / len(values) if values else 0.0

        kept, admitted = share(self.related), share(self.unrelated)
        true = kept * len(self.related)
        passed = true + admitted * len(self.unrelated)
        precision = true / passed if passed else 0.0
        f1 = 2 * precision * kept / (precision + kept) if precision + kept else 0.0
        return AtFloor(floor, kept, admitted, share(self.near), precision, f1)

    def table(self) -> list[AtFloor]:
        return [self.at(floor) for floor in FLOORS]

    def chosen(self) -> dict[str, AtFloor | None]:
        """Each rule's floor; None when no floor of FLOORS satisfies it."""
        rows = self.table()

        def best(key: Callable[[AtFloor], float]) -> AtFloor:
            return max(reversed(rows), key=key)  # the highest floor among equals

        keeping = [r for r in rows if r.kept >= KEEP]
        return {
            f"keep {KEEP:.0%}": keeping[-1] if keeping else None,
            "best F1": best(lambda r: r.f1),
            "Youden": best(lambda r: r.kept - r.admitted),
        }


def spread(values: Sequence[float]) -> list[float]:
    return [float(np.percentile(values, q)) for _, q in QUANTILES] if values else []


async def calibrate(backend: str, pairs: Sequence[Pair]) -> Calibration | None:
    measured = await cosines(backend, pairs)
    if measured is None:
        return None
    model_id, found = measured
    labelled = list(zip(pairs, found, strict=True))
    return Calibration(
        backend,
        model_id,
        related=[c for p, c in labelled if p.related],
        unrelated=[c for p, c in labelled if not p.related],
        near=[c for p, c in labelled if p.near],
    )


# --- printing ---------------------------------------------------------------------------


def print_tables(calibrations: Sequence[Calibration]) -> None:
    print("cosine of each pair's query and text")
    table = Report(
        ["backend", "pairs", "n", *(name for name, _ in QUANTILES)],
        [8, 9, 4, *(6 for _ in QUANTILES)],
        text=2,
    )
    for c in calibrations:
        for label, values in (("related", c.related), ("unrelated", c.unrelated)):
            table.print([c.backend, label, str(len(values)), *(f"{v:.3f}" for v in spread(values))])
        table.print([c.backend, "near", str(len(c.near)), *(f"{v:.3f}" for v in spread(c.near))])
    print()

    print("a floor: the share of related pairs kept, of unrelated (and near-topic) admitted")
    columns = ["backend", "floor", "kept", "admitted", "near", "precision", "F1"]
    table = Report(columns, [8, 5, 6, 8, 6, 9, 6])
    for c in calibrations:
        for r in c.table():
            shares = (r.kept, r.admitted, r.near, r.precision, r.f1)
            table.print([c.backend, f"{r.floor:.2f}", *(f"{v:.3f}" for v in shares)])
    print()

    print("the floor each rule chooses")
    columns = ["backend", "rule", "floor", "kept", "admitted", "near", "F1"]
    table = Report(columns, [8, 8, 5, 6, 8, 6, 6], text=2)
    for c in calibrations:
        for rule, chosen in c.chosen().items():
            if chosen is None:
                table.print([c.backend, rule, "-", "-", "-", "-", "-"])
                continue
            numbers = (chosen.kept, chosen.admitted, chosen.near, chosen.f1)
            table.print([c.backend, rule, f"{chosen.floor:.2f}", *(f"{v:.3f}" for v in numbers)])


def as_json(calibrations: Sequence[Calibration], pairs: Sequence[Pair]) -> dict[str, Any]:
    def rounded(r: AtFloor | None) -> dict[str, float] | None:
        if r is None:
            return None
        return {k: round(v, 4) for k, v in vars(r).items()}

    return {
        "pairs": {
            "related": sum(p.related for p in pairs),
            "unrelated": sum(not p.related for p in pairs),
            "near": sum(p.near for p in pairs),
        },
        "backends": [
            {
                "backend": c.backend,
                "model_id": c.model_id,
                "cosines": {
                    label: {n: round(v, 4) for (n, _), v in zip(QUANTILES, s, strict=True)}
                    for label, s in (
                        ("related", spread(c.related)),
                        ("unrelated", spread(c.unrelated)),
                        ("near", spread(c.near)),
                    )
                },
                "floors": [rounded(r) for r in c.table()],
                "chosen": {rule: rounded(r) for rule, r in c.chosen().items()},
            }
            for c in calibrations
        ],
    }


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backends", type=names, default=["static"], help="e.g. static,onnx")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


async def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    pairs = validated_pairs()
    calibrations = []
    for backend in args.backends:
        calibration = await calibrate(backend, pairs)
        if calibration is None:
            print(f"{backend}: no vectors, so no floor to calibrate", file=sys.stderr)
        else:
            calibrations.append(calibration)
    if args.json:
        print(json.dumps(as_json(calibrations, pairs), indent=2))
        return 0
    related = sum(p.related for p in pairs)
    near = sum(p.near for p in pairs)
    print(
        f"{len(pairs)} labelled pairs: {related} related, {len(pairs) - related} unrelated "
        f"({near} of them near the query's topic)\n"
    )
    if calibrations:
        print_tables(calibrations)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
