"""bench/calibrate.py: the labelled pairs hold their rules and stay apart from the recall
sets, the floors are counted as the search index applies them, and a run on `static`
prints every table."""

import re

import pytest

from bench import calibrate
from bench.calibrate import FLOORS, Calibration, Pair, load_pairs, pair_problems
from bench.recall import load_data, load_notes

PAIRS = load_pairs()


def test_the_pairs_are_valid_and_as_many_as_promised() -> None:
    assert pair_problems(PAIRS) == []
    assert len(PAIRS) >= 300
    related = [p for p in PAIRS if p.related]
    near = [p for p in PAIRS if p.near]
    assert len(related) >= 100
    assert len(near) >= 100  # hard negatives on the query's topic
    assert not any(p.related for p in near)
    assert len({p.id for p in PAIRS}) == len(PAIRS)


def test_the_pairs_are_apart_from_what_they_would_calibrate_for() -> None:
    sets = load_notes()
    _, conversations = load_data()
    notes = {n.text.casefold() for n in sets.notes}
    asked = {q.question.casefold() for q in sets.paraphrase}
    asked |= {u.question.casefold() for u in sets.unrelated}
    asked |= {q.question.casefold() for q in conversations}
    assert not {p.text.casefold() for p in PAIRS} & notes
    assert not {p.query.casefold() for p in PAIRS} & asked


def test_pairs_that_break_the_rules_are_refused() -> None:
    sets = load_notes()
    first = PAIRS[0]
    both = first.model_copy(update={"related": True, "near": True})
    a_note = PAIRS[1].model_copy(update={"text": sets.notes[0].text.upper()})
    a_question = PAIRS[2].model_copy(update={"query": sets.paraphrase[0].question})
    lonely = Pair(id="c999", query="just one text", text="Some note.", related=True, near=False)
    found = pair_problems([both, a_note, a_question, *PAIRS[3:], PAIRS[3], lonely])
    assert f"pair {first.id}: a related pair cannot also be a near (unrelated) one" in found
    assert f"pair {PAIRS[1].id}: its text is note {sets.notes[0].id} of the recall sets" in found
    assert (
        f"pair {PAIRS[2].id}: its query is question {sets.paraphrase[0].id} of the recall sets"
        in found
    )
    assert f"pair {PAIRS[3].id} should be c{len(PAIRS) + 1:03d}" in found
    assert f"pair {PAIRS[3].id} repeats an earlier pair" in found
    assert "query 'just one text' needs both related and unrelated texts" in found


def test_a_floor_keeps_what_reaches_it_and_the_rules_choose_by_it() -> None:
    measured = Calibration(
        "static", "static:test", related=[0.2, 0.4], unrelated=[0.1, 0.3], near=[0.3]
    )
    at = measured.at(0.3)  # a cosine equal to the floor passes, as in the index
    assert (at.kept, at.admitted, at.near) == (0.5, 0.5, 1.0)
    assert at.precision == 0.5
    assert at.f1 == pytest.approx(0.5)
    assert [r.floor for r in measured.table()] == list(FLOORS)
    assert (FLOORS[0], FLOORS[-1], len(FLOORS)) == (0.1, 0.5, 41)
    chosen = measured.chosen()
    keep = chosen["keep 95%"]
    assert keep is not None
    assert keep.floor == 0.2  # the highest floor keeping both related pairs
    best = chosen["best F1"]
    assert best is not None
    assert best.floor == 0.2  # F1 0.8 from 0.11 to 0.20; 0.67 from 0.31 to 0.40
    youden = chosen["Youden"]
    assert youden is not None
    assert youden.floor == 0.4  # kept 0.5, admitted 0: kept - admitted 0.5, the highest
    assert Calibration("x", "x", [0.05], [0.0], []).chosen()["keep 95%"] is None


async def test_a_run_on_static_prints_every_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await calibrate.main(["--backends", "static,none"]) == 0
    captured = capsys.readouterr()
    assert "none: no vectors, so no floor to calibrate" in captured.err
    rows = [re.split(r"\s{2,}", line.strip()) for line in captured.out.splitlines()]
    spread = {r[1]: [float(v) for v in r[3:]] for r in rows if r[0] == "static" and len(r) == 10}
    assert list(spread) == ["related", "unrelated", "near"]
    assert all(values == sorted(values) for values in spread.values())
    # The labels are not backwards: related pairs resemble each other more.
    assert spread["related"][4] > spread["unrelated"][4]
    floors = [r for r in rows if r[0] == "static" and len(r) == 7 and re.match(r"0\.\d\d$", r[1])]
    assert [float(r[1]) for r in floors] == list(FLOORS)
    kept = [float(r[2]) for r in floors]
    assert kept == sorted(kept, reverse=True)  # a higher floor never keeps more
    rules = [r[1] for r in rows if r[0] == "static" and r[1] in ("keep 95%", "best F1", "Youden")]
    assert rules == ["keep 95%", "best F1", "Youden"]
