"""bench/updates.py: the shipped data holds its rules (each rule shown to catch a breach of
it), supersessions are judged as they should be, a slice runs end to end on the `static`
backend, and automatic supersession ends no true fact on the shipped data (the target the
engine's rules are tuned to: this test fails while they merge two true facts)."""

import re
from collections import Counter
from datetime import timedelta

import pytest

from api.search import when
from bench import updates
from bench.updates import Chain, Data, Person, Text, UpdateQuestion, judge, problems

DATA = updates.load_data()
KEY_VALUE = re.compile(r"^[^:.!?]{2,40}: \S")


def test_the_data_is_valid_and_as_large_as_promised() -> None:
    assert problems(DATA) == []
    size = updates.describe(DATA)
    assert 8 <= size["people"] <= 12
    assert size["chains"] >= 100
    assert size["distractor_groups"] >= 40
    assert all(len(p.notes) >= 20 for p in DATA.people)  # competition for search
    assert set(size["questions"]) == {"current", "history", "as_of"}
    assert size["questions"]["history"] >= 100
    kinds = Counter(g.kind for p in DATA.people for g in p.distractors)
    assert set(kinds) == {"other-subject", "multi-valued", "past", "temporary", "other-attribute"}
    assert kinds["multi-valued"] >= 10
    assert kinds["other-subject"] >= 10
    lengths = Counter(len(c.steps) for p in DATA.people for c in p.chains)
    assert set(lengths) == {2, 3, 4}


def test_the_steps_are_written_both_as_key_value_lines_and_as_sentences() -> None:
    steps = [s.text for p in DATA.people for c in p.chains for s in c.steps]
    keyed = [t for t in steps if KEY_VALUE.match(t)]
    assert len(keyed) >= 100
    assert len(steps) - len(keyed) >= 100
    chains = [c for p in DATA.people for c in p.chains]
    mixed = [c for c in chains if len({bool(KEY_VALUE.match(s.text)) for s in c.steps}) == 2]
    assert len(mixed) >= 15  # a chain whose writers changed style


def test_a_period_is_what_the_time_parser_reads_in_its_question() -> None:
    asked = {c.id: p.asked_at for p in DATA.people for c in p.chains}
    periods = [q for q in DATA.questions if q.period is not None]
    assert len(periods) >= 50
    for q in periods:
        assert q.period is not None
        span = when.span(q.question, asked[q.chain].timestamp())
        assert span is not None, q.id
        since, until = (t.timestamp() for t in q.period)
        assert abs(span[0] - since) <= 86_400, q.id
        assert abs(span[1] - until) <= 86_400, q.id


def edited(data: Data, person: Person, question: UpdateQuestion | None = None) -> Data:
    people = [person if p.id == person.id else p for p in data.people]
    questions = [question if question and q.id == question.id else q for q in data.questions]
    return Data(people, questions, data.notes)


def test_steps_out_of_order_repeated_texts_and_unknown_notes_are_refused() -> None:
    person = DATA.people[0]
    chain = person.chains[0]
    swapped = chain.model_copy(update={"steps": (chain.steps[1], chain.steps[0], *chain.steps[2:])})
    again = person.distractors[0].items[0].model_copy(update={"text": chain.steps[1].text.upper()})
    group = person.distractors[0].model_copy(update={"items": (again,)})
    lost = person.notes[0].model_copy(update={"note": "n999"})
    broken = person.model_copy(
        update={
            "chains": (swapped, *person.chains[1:]),
            "distractors": (group, *person.distractors[1:]),
            "notes": (lost, *person.notes[1:]),
        }
    )
    found = problems(edited(DATA, broken))
    assert f"chain {chain.id}: step 1 is not later than step 0" in found
    assert f"distractors {group.id}: a group needs two texts or more" in found
    assert "p01: note n999 is in no notes.json" in found
    # the steps swapped, Porto is step 0; the distractor saying it again was written first
    assert "p01: step/p01-c01/0 repeats the text of distractor/p01-d01/0" in found


def test_answers_outside_their_step_are_refused() -> None:
    def of(kind: str) -> UpdateQuestion:
        return next(q for q in DATA.questions if q.kind == kind and q.chain == "p01-c01")

    chain = DATA.chains()["p01-c01"]
    current = of("current").model_copy(update={"answer": 0})
    found = problems(edited(DATA, DATA.people[0], current))
    assert found == [f"question {current.id}: a current question's answer is the last step, 2"]

    history = next(q for q in DATA.questions if q.chain == "p01-c01" and q.period)
    late = history.model_copy(update={"answer": 1})  # its period is before step 1
    found = problems(edited(DATA, DATA.people[0], late))
    assert found == [f"question {late.id}: its period is not inside step 1's validity"]

    as_of = of("as_of")
    step = chain.steps[as_of.answer]
    early = as_of.model_copy(update={"as_of": step.at - timedelta(days=1)})
    found = problems(edited(DATA, DATA.people[0], early))
    assert found == [f"question {as_of.id}: as_of {early.as_of:%Y-%m-%d} is outside step 0"]


# --- judging the supersessions -------------------------------------------------------


def tiny() -> tuple[Data, dict[str, updates.Written]]:
    """One person: a chain of three steps and a pair of distractors, each text its own
    memory id (the ref's name)."""
    at = DATA.people[0].chains[0].steps[0].at

    def text(days: int, words: str) -> Text:
        return Text(at=at + timedelta(days=days), text=words)

    chain = Chain(
        id="p01-c01",
        attribute="home",
        steps=(
            text(0, "Lives in: Lisbon"),
            text(10, "Lives in: Porto"),
            text(20, "Lives in: Braga"),
        ),
    )
    group = updates.Distractors(
        id="p01-d01",
        kind="other-subject",
        items=(text(5, "My friend Anna lives in Paris."), text(6, "My friend Tom lives in Rome.")),
    )
    person = DATA.people[0].model_copy(
        update={"chains": (chain,), "distractors": (group,), "notes": ()}
    )
    data = Data([person], [], DATA.notes)
    written = {"/".join(map(str, w.ref)): w for w in updates.writes(person, DATA.notes)}
    return data, written


def test_supersessions_are_judged_right_wrong_skipped_or_missed() -> None:
    data, written = tiny()
    lisbon, porto, braga = (f"step/p01-c01/{i}" for i in range(3))
    anna, tom = "distractor/p01-d01/0", "distractor/p01-d01/1"

    right = judge(data.people, written, {lisbon: porto, porto: braga})
    assert (right.wrong, right.skipped, right.missed, right.pairs) == ([], [], [], 2)

    found = judge(data.people, written, {anna: tom, lisbon: braga})
    assert [(s.old.text, s.new.text) for s in found.wrong] == [
        ("My friend Anna lives in Paris.", "My friend Tom lives in Rome.")
    ]
    assert [(s.old.text, s.new.text) for s in found.skipped] == [
        ("Lives in: Lisbon", "Lives in: Braga")
    ]
    missed = [(m.old.text, m.new.text, m.by and m.by.text) for m in found.missed]
    assert missed == [
        ("Lives in: Lisbon", "Lives in: Porto", "Lives in: Braga"),
        ("Lives in: Porto", "Lives in: Braga", None),
    ]
    assert "'My friend Anna lives in Paris.'" in found.wrong[0].line()


# --- end to end ----------------------------------------------------------------------


def a_slice() -> Data:
    """Two people, three chains each with their questions, their distractors and notes."""
    people = [
        p.model_copy(update={"chains": p.chains[:3], "notes": p.notes[:8]}) for p in DATA.people[:2]
    ]
    chains = {c.id for p in people for c in p.chains}
    return Data(people, [q for q in DATA.questions if q.chain in chains], DATA.notes)


async def test_a_slice_runs_end_to_end_on_static(capsys: pytest.CaptureFixture[str]) -> None:
    data = a_slice()
    assert await updates.main(["--backends", "static"], data=data) == 0
    printed = capsys.readouterr().out
    rows = [re.split(r"\s{2,}", line.strip()) for line in printed.splitlines()]
    measured = [r for r in rows if r[0] == "static"]
    modes = [line.split()[1] for line in printed.splitlines() if line.startswith("mode: ")]
    assert modes == ["lexical", "semantic", "hybrid"]
    assert [r[1] for r in measured] == ["automatic", "explicit"] * 3
    for row in measured:
        assert len(row) == 11
        assert all(0 <= float(v) <= 1 for v in row[2:7])
    explicit = [r for r in measured if r[1] == "explicit"]
    pairs = sum(len(c.steps) - 1 for p in data.people for c in p.chains)
    assert {(r[3], r[7], r[8], r[9]) for r in explicit} == {("0.000", "0", "0", f"0/{pairs}")}


async def test_automatic_supersession_ends_no_true_fact_on_the_shipped_data() -> None:
    judged, _ = await updates.run_writer("static", "automatic", [], DATA, limit=1)
    assert judged.pairs == sum(len(c.steps) - 1 for c in DATA.chains().values())
    assert [s.line() for s in judged.wrong] == []


async def test_the_command_line_validates_only_on_a_dry_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await updates.main(["--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"{len(DATA.people)} people, {len(DATA.chains())} chains")
    assert "mode:" not in printed
