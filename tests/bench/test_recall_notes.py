"""bench/recall.py's note sets: the data holds its rules (each rule shown to catch a
breach of it), the metrics count what they say, and a slice of the sets runs end to end on
the `static` and `none` backends."""

import re
from collections import Counter

import pytest

from api.kit.clock import FrozenClock
from api.search import when
from bench import recall
from bench.recall import (
    Note,
    NoteQuestion,
    NoteRun,
    NoteSets,
    Returned,
    Unanswerable,
    content_words,
    load_notes,
    note_problems,
)

SETS = load_notes()


def test_the_note_sets_are_valid_and_as_large_as_promised() -> None:
    assert note_problems(SETS) == []
    answers = Counter(a for q in SETS.paraphrase for a in q.answers)
    assert len(answers) >= 60  # notes that answer a question
    assert set(answers.values()) <= {1, 2}  # one or two questions each
    assert len(SETS.notes) - len(answers) >= 300  # everyday notes that answer none
    assert len(SETS.unrelated) >= 50
    assert {u.near for u in SETS.unrelated} == {True, False}
    ids = [n.id for n in SETS.notes] + [q.id for q in SETS.paraphrase]
    ids += [u.id for u in SETS.unrelated]
    assert len(ids) == len(set(ids))


def test_no_paraphrase_question_shares_a_word_with_its_answer() -> None:
    text = {n.id: n.text for n in SETS.notes}
    for q in SETS.paraphrase:
        for answer in q.answers:
            assert not content_words(q.question) & content_words(text[answer]), q.id


def test_no_note_holds_an_unrelated_question_s_absent_words() -> None:
    held = set().union(*(content_words(n.text) for n in SETS.notes))
    for u in SETS.unrelated:
        absent = set().union(*(content_words(w) for w in u.absent))
        assert absent, u.id
        assert absent <= content_words(u.question), u.id
        assert not absent & held, u.id


def test_no_question_names_a_time() -> None:
    asked_at = recall.NOTES_STORED_AT + 86_400 * 2
    for question in [q.question for q in SETS.paraphrase] + [u.question for u in SETS.unrelated]:
        assert when.span(question, asked_at) is None, question


def with_(
    notes: list[Note] | None = None,
    paraphrase: list[NoteQuestion] | None = None,
    unrelated: list[Unanswerable] | None = None,
) -> NoteSets:
    return NoteSets(
        SETS.notes if notes is None else notes,
        SETS.paraphrase if paraphrase is None else paraphrase,
        SETS.unrelated if unrelated is None else unrelated,
    )


def test_a_question_sharing_a_word_with_its_answer_is_refused() -> None:
    q = SETS.paraphrase[0]
    answer = next(n for n in SETS.notes if n.id == q.answers[0])
    word = sorted(content_words(answer.text))[0]
    sharing = q.model_copy(update={"question": f"{q.question} {word}"})
    found = note_problems(with_(paraphrase=[sharing, *SETS.paraphrase[1:]]))
    assert found == [f"question {q.id} shares {[word]} with its answer {answer.id}"]


def test_broken_ids_answers_and_repeated_notes_are_refused() -> None:
    first, second = SETS.notes[0], SETS.notes[1]
    again = Note(id=f"n{len(SETS.notes) + 1:03d}", text=f"  {first.text.upper()} ")
    swapped = [second, first, *SETS.notes[2:], again]
    lost = SETS.paraphrase[0].model_copy(update={"answers": ("n999",)})
    twice = [lost, *SETS.paraphrase[1:], SETS.paraphrase[1]]
    found = note_problems(with_(notes=swapped, paraphrase=twice))
    assert f"note {second.id} should be n001" in found
    assert f"note {again.id} repeats note {first.id}" in found
    assert f"question {lost.id}: answer n999 is no note" in found
    assert f"question {SETS.paraphrase[1].id} appears twice" in found


def test_an_unrelated_question_that_notes_could_answer_is_refused() -> None:
    coffee = Unanswerable(id="x999", question="How do I take my coffee?", near=True, absent=())
    said = coffee.model_copy(update={"absent": ("coffee",)})
    elsewhere = coffee.model_copy(update={"absent": ("tea",)})
    found = note_problems(with_(unrelated=[*SETS.unrelated, coffee]))
    assert found == ["question x999: name the words of it that no note holds (absent)"]
    found = note_problems(with_(unrelated=[*SETS.unrelated, said]))
    assert found == ["question x999: notes hold ['coffe'], absent from them it says"]
    found = note_problems(with_(unrelated=[*SETS.unrelated, elsewhere]))
    assert found == ["question x999: absent words ['tea'] are not in the question"]


# --- the metrics ----------------------------------------------------------------------


def test_the_paraphrase_row_counts_ranks_and_empty_answers() -> None:
    asked = [
        NoteQuestion(id="p1", question="a", answers=("n2",)),
        NoteQuestion(id="p2", question="b", answers=("n7",)),
        NoteQuestion(id="p3", question="c", answers=("n1",)),
        NoteQuestion(id="p4", question="d", answers=("n4",)),
    ]
    got = [
        Returned(("n2", "n3"), 2, 0.001),  # first
        Returned(("n1", "n3", "n5", "n6", "n7"), 9, 0.003),  # fifth
        Returned((), 0, 0.002),  # nothing at all
        Returned(tuple(f"x{i}" for i in range(10)), 40, 0.002),  # ten, none of them it
    ]
    row = NoteRun("hybrid", "static", list(zip(asked, got, strict=True)), []).paraphrase_row()
    assert row is not None
    assert row.questions == 4
    assert row.recall == (0.25, 0.5, 0.5)
    assert row.mrr == pytest.approx((1 + 1 / 5) / 4)
    assert row.empty == 0.25
    assert row.ms_per_query == pytest.approx(2.0)


def test_the_unrelated_row_counts_any_result_as_a_wrong_one() -> None:
    asked = [
        Unanswerable(id="x1", question="tea?", near=True, absent=("tea",)),
        Unanswerable(id="x2", question="sister?", near=True, absent=("sister",)),
        Unanswerable(id="x3", question="volcanoes?", near=False, absent=("volcanoes",)),
    ]
    got = [Returned(("n1", "n2"), 14, 0.0), Returned((), 0, 0.0), Returned((), 0, 0.0)]
    row = NoteRun("semantic", "static", [], list(zip(asked, got, strict=True))).unrelated_row()
    assert row is not None
    assert row.answered == pytest.approx(1 / 3)
    assert (row.near, row.off) == (0.5, 0.0)
    assert row.returned == pytest.approx(2 / 3)
    assert row.total == pytest.approx(14 / 3)
    assert NoteRun("semantic", "static", [], []).unrelated_row() is None


def test_the_baseline_finds_no_paraphrase_answer() -> None:
    baseline = recall.run_note_baseline(SETS, ["paraphrase", "unrelated"], limit=10)
    row = baseline.paraphrase_row()
    assert row is not None
    assert row.questions == len(SETS.paraphrase)
    assert row.recall == (0.0, 0.0, 0.0)
    # ... while it does find notes by their words: the ranker itself works.
    tyres = next(n for n in SETS.notes if n.text.startswith("Tyre pressures"))
    assert recall.note_overlap_ranking(SETS.notes, "tyre pressures", 10).ranked[0] == tyres.id


# --- end to end -----------------------------------------------------------------------


def note(text: str) -> Note:
    return next(n for n in SETS.notes if n.text == text)


def a_slice() -> tuple[NoteSets, NoteQuestion]:
    """Three paraphrase questions with their answers among twenty other notes, three
    unrelated questions, and a control question put in the words of one note."""
    paraphrase = SETS.paraphrase[:3]
    answers = {a for q in paraphrase for a in q.answers}
    others = [n for n in SETS.notes if n.id not in answers][:20]
    notes = [n for n in SETS.notes if n.id in answers] + others
    unrelated = [u for u in SETS.unrelated if u.question == "How do volcanoes form?"]
    unrelated += [u for u in SETS.unrelated if u.near][:2]
    control = NoteQuestion(id="control", question=others[5].text, answers=(others[5].id,))
    return NoteSets(notes, [*paraphrase, control], unrelated), control


# The runs of a slice on `static` and `none`: the word-overlap baseline, then each mode a
# backend can search (`none` has no vectors, so no semantic mode).
RUNS_ON_STATIC_AND_NONE = [
    ("baseline-overlap", "-"),
    ("lexical", "static"),
    ("semantic", "static"),
    ("hybrid", "static"),
    ("lexical", "none"),
    ("hybrid", "none"),
]


async def test_a_slice_runs_end_to_end_on_static_and_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sets, control = a_slice()
    held = set().union(*(content_words(n.text) for n in sets.notes))
    volcanoes = sets.unrelated[0]
    assert not content_words(volcanoes.question) & held  # so lexical search finds nothing
    chosen: list[recall.DataSet] = ["paraphrase", "unrelated"]
    runs = [recall.run_note_baseline(sets, chosen, 5)]
    for backend in ("static", "none"):
        runs += await recall.run_notes_backend(backend, recall.MODES, sets, chosen, 5)

    assert [(r.mode, r.backend) for r in runs] == RUNS_ON_STATIC_AND_NONE
    ids = {n.id for n in sets.notes}
    for run in runs:
        assert [q.id for q, _ in run.paraphrase] == [q.id for q in sets.paraphrase]
        assert [u.id for u, _ in run.unrelated] == [u.id for u in sets.unrelated]
        returned = [got for _, got in run.paraphrase] + [got for _, got in run.unrelated]
        for got in returned:
            assert set(got.ranked) <= ids
            assert len(got.ranked) <= 5
            assert got.total >= len(got.ranked)
        if run.mode in ("lexical", "baseline-overlap"):
            found = {q.id: got for q, got in run.paraphrase}
            assert found[control.id].ranked[0] == control.answers[0]  # stored ids map back
            nothing = {u.id: got for u, got in run.unrelated}[volcanoes.id]
            assert nothing == Returned((), 0, nothing.seconds)

    recall.print_note_tables(runs)
    printed = capsys.readouterr().out
    rows = [re.split(r"\s{2,}", line.strip()) for line in printed.splitlines()]
    measured = [r[:3] for r in rows if len(r) > 3 and r[2] == "4"]  # the paraphrase table
    assert measured == [[r.mode, r.backend, "4"] for r in runs]
    assert len([r for r in rows if len(r) > 3 and r[2] == "3"]) == len(runs)  # unrelated


async def test_a_note_stored_twice_stops_the_run() -> None:
    tyres = note("Tyre pressures: 33 psi front, 30 rear")
    twice = [tyres, tyres.model_copy(update={"id": "n002"})]
    clock = FrozenClock(recall.NOTES_STORED_AT)
    with pytest.raises(ValueError, match="note n002 was stored already, as n"):
        async with (
            recall.sqlite_table(clock) as table,
            recall.load_notes_into(table, "static", clock, twice),
        ):
            pass


async def test_the_command_line_validates_and_prints_the_baseline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await recall.main(["--sets", "paraphrase,unrelated", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert f"{len(SETS.notes)} notes in one agent's archival memory" in printed
    assert "users" not in printed  # no conversations asked for
    baseline = [line for line in printed.splitlines() if line.startswith("baseline-overlap")]
    assert len(baseline) == 2  # one row in each table
    assert baseline[0].split()[2:6] == [str(len(SETS.paraphrase)), "0.000", "0.000", "0.000"]
