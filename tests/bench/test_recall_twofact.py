"""bench/recall.py's two-fact set: the data holds its rules (each shown to catch a breach),
all@k counts a question only when every one of its notes is in the top k, and a slice runs
end to end on the `static` and `none` backends."""

import pytest

from api.search import when
from bench import recall
from bench.recall import (
    Note,
    NoteRun,
    Returned,
    TwoFactQuestion,
    TwoFacts,
    load_notes,
    load_twofact,
    twofact_problems,
)
from tests.bench.test_recall_notes import RUNS_ON_STATIC_AND_NONE

SETS = load_notes()
TWOFACT = load_twofact()


def test_the_two_fact_set_is_valid_and_as_large_as_promised() -> None:
    assert twofact_problems(SETS, TWOFACT) == []
    assert len(TWOFACT.questions) >= 40
    kinds = [q.kind for q in TWOFACT.questions]
    assert kinds.count("bridge") >= 20
    assert kinds.count("both") >= 20
    assert all(len(q.answers) >= 2 for q in TWOFACT.questions)
    asked_at = recall.NOTES_STORED_AT + 86_400 * 2
    for q in TWOFACT.questions:
        assert when.span(q.question, asked_at) is None, q.id  # no time: see the README


def test_broken_notes_and_answers_are_refused() -> None:
    first = TWOFACT.notes[0]
    again = Note(id=f"t{len(TWOFACT.notes) + 1:03d}", text=f" {SETS.notes[0].text.upper()}")
    absent = Note(id=f"t{len(TWOFACT.notes) + 2:03d}", text="My sister Ana lives in Porto.")
    one = TWOFACT.questions[0].model_copy(update={"answers": (first.id,)})
    lost = TWOFACT.questions[1].model_copy(update={"answers": (first.id, "t999")})
    broken = TwoFacts(
        notes=(*TWOFACT.notes, again, absent),
        questions=(one, lost, *TWOFACT.questions[2:]),
    )
    found = twofact_problems(SETS, broken)
    assert f"note {again.id} repeats note {SETS.notes[0].id}" in found
    assert f"note {absent.id} holds ['sister'], absent from every note" in found
    assert f"question {one.id}: a two-fact question needs two distinct notes or more" in found
    assert f"question {lost.id}: answer t999 is no note" in found
    assert len(found) == 4


def test_all_at_k_needs_every_note_in_the_top_k() -> None:
    asked = [
        TwoFactQuestion(id="f1", kind="bridge", question="a", answers=("n1", "t1")),
        TwoFactQuestion(id="f2", kind="both", question="b", answers=("n2", "n3")),
        TwoFactQuestion(id="f3", kind="both", question="c", answers=("n4", "n5")),
    ]
    got = [
        Returned(("n1", "x", "t1"), 3, 0.001),  # both in the top 5
        Returned(("n2", "x", "x", "x", "x", "n3"), 6, 0.001),  # both in the top 10 only
        Returned(("x", "n5"), 2, 0.001),  # one of two
    ]
    rows = NoteRun("hybrid", "static", [], [], list(zip(asked, got, strict=True))).twofact_rows()
    overall, both, bridge = rows
    assert [r.kind for r in rows] == ["all", "both", "bridge"]
    assert overall.every == pytest.approx((1 / 3, 2 / 3))
    assert overall.recall == pytest.approx(((0.5 + 0.5 + 0) / 3, (1 + 0.5 + 0.5) / 3, 2.5 / 3))
    assert overall.mrr == pytest.approx((1 + 1 + 1 / 2) / 3)
    assert both.every == (0.0, 0.5)
    assert bridge.every == (1.0, 1.0)


async def test_a_slice_runs_end_to_end_on_static_and_none() -> None:
    """Three questions with their notes among twenty others."""
    asked = TWOFACT.questions[:3]
    answers = {a for q in asked for a in q.answers}
    notes = [n for n in SETS.notes if n.id in answers] + [
        n for n in SETS.notes if n.id not in answers
    ][:20]
    sets = recall.NoteSets(notes, [], [])
    twofact = TwoFacts(notes=TWOFACT.notes, questions=tuple(asked))
    runs = [recall.run_twofact_baseline(sets, twofact, 5)]
    for backend in ("static", "none"):
        runs += await recall.run_twofact_backend(backend, recall.MODES, sets, twofact, 5)
    assert [(r.mode, r.backend) for r in runs] == RUNS_ON_STATIC_AND_NONE
    known = {n.id for n in notes} | {n.id for n in TWOFACT.notes}
    for run in runs:
        assert [q.id for q, _ in run.twofact] == [q.id for q in asked]
        for _, got in run.twofact:
            assert set(got.ranked) <= known
            assert len(got.ranked) <= 5


async def test_the_command_line_validates_and_prints_the_baseline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await recall.main(["--sets", "twofact", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert f"{len(TWOFACT.questions)} two-fact questions" in printed
    baseline = [line for line in printed.splitlines() if line.startswith("baseline-overlap")]
    assert [line.split()[2] for line in baseline] == ["all", "both", "bridge"]
