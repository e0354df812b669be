"""Facts that change: whether archival memory answers with the fact true now, or the one true
then, and whether it supersedes exactly the memories that a newer one replaces.

The data (bench/recall_data/updates.json, described in bench/recall_data/README.md) is our
own: ten people, each one agent, whose facts change over three and a half years (where they
live, who they work for, their partner, phone number, car, gym, manager, diet, favourites,
...): 110 update chains of 2 to 4 steps, each step a text as an agent or a memory layer
writes it ("Lives in: Lisbon", "The user has moved to York.", "Changed my number, it's
07911 554 219 now."). Beside them, 50 distractor groups that look like updates and are not
(two friends' cities, "Likes: sushi" after "Likes: pastel de nata", a sister's job beside
the user's, "I lived in London for a year as an Erasmus student.", a work phone beside the
mobile), and thirty everyday notes per person from bench/recall_data/notes.json, so that
search has competition. Questions name the step that answers them (a chain and a step's
index), of three kinds: `current` ("Where do I live?": the last step), `history` ("Where did
I live before Braga?", "What was my job in 2024?": the step true then) and `as_of` (a
neutral question asked with `as_of`, a date inside one step's validity: that step). The
data is validated before anything runs (ids, that a chain's dates increase, that a question's
date or period lies inside its answer's validity, that no person has one text twice, ...);
on invalid data nothing runs and every problem is listed.

For each embedding backend (`--backends`, default `static`) and each writer (`--writers`),
each person's texts are inserted into a fresh agent's archival memory through the product's
service (`api.memory.archival.insert`) on a temporary SQLite table, in time order, with a
frozen clock at each text's date. The writers:

- `automatic`: the engine decides what a text replaces (`automatic=True`), as agents write;
- `explicit`: the control: no automatic supersession, and each step names the one before it
  (`supersedes=[id]`), as a writer that knows what it replaces does;
- `none` (on request): neither, so memory only accumulates: the floor.

Then every question is asked (`archival.search`, with the clock at the person's `asked_at`)
in each mode (`--modes`, default hybrid, semantic and lexical; `semantic` is skipped without
vectors), and one table per mode is printed:

- current, history, as_of: the share of questions of that kind whose first result is the
  step that answers them; stale: the share of `current` questions whose first result is an
  older step of the same chain (the answer of a memory that only accumulates); none: the
  share of all questions that got no result at all;
- wrong: supersessions made whose old and new memory are not consecutive steps of one chain:
  a true fact ended (target 0); skipped: an older step ended by a later, not the next, step of
  its chain (stale either way: it follows a missed one); missed: consecutive steps where the
  older was not superseded by the newer. Counted over the writes, so the same in every mode.

After the tables, the wrong, skipped and missed supersessions are listed with their texts, so
that the engine's rules can be tuned.

    uv run --frozen python bench/updates.py [--backends static,onnx] [--modes hybrid,lexical]
                                            [--writers automatic,explicit,none] [--limit 5]
                                            [--json] [--dry-run]

`--dry-run` validates the data only. Exits 2 when the data is invalid.
"""

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict

from api.kit.clock import FrozenClock
from api.memory.models import Category
from api.repositories import Repositories
from api.runtime.architectures.registry import ARCHITECTURES
from bench.recall import (
    DATA,
    MODES,
    Notes,
    SearchMode,
    names,
    positive,
    same_text,
    sqlite_table,
    started,
)
from bench.report import Report

if TYPE_CHECKING:
    from api.search.engine import SearchEngine

QuestionKind = Literal["current", "history", "as_of"]
GroupKind = Literal["other-subject", "multi-valued", "past", "temporary", "other-attribute"]
Writer = Literal["automatic", "explicit", "none"]
QUESTION_KINDS: tuple[QuestionKind, ...] = ("current", "history", "as_of")
WRITERS: tuple[Writer, ...] = ("automatic", "explicit", "none")
DEFAULT_WRITERS: tuple[Writer, ...] = ("automatic", "explicit")
STEPS = range(2, 5)  # steps a chain may have
MARGIN = timedelta(days=1)  # a history question's period lies this far inside its answer's

# --- the data ------------------------------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Text(_Frozen):
    """A text as an agent writes it into archival memory, at a time."""

    at: AwareDatetime
    text: str
    category: Category | None = None


class Chain(_Frozen):
    """One attribute of one person, changing: each step replaces the one before it."""

    id: str
    attribute: str
    steps: tuple[Text, ...]


class Distractors(_Frozen):
    """Texts that look like updates of each other (or of the chain they resemble) and are not:
    all stay true."""

    id: str
    kind: GroupKind
    resembles: str | None = None
    items: tuple[Text, ...]


class Filler(_Frozen):
    """An everyday note of bench/recall_data/notes.json, written at a time."""

    at: AwareDatetime
    note: str


class Person(_Frozen):
    id: str
    name: str
    about: str
    asked_at: AwareDatetime
    chains: tuple[Chain, ...]
    distractors: tuple[Distractors, ...]
    notes: tuple[Filler, ...]


class UpdateQuestion(_Frozen):
    """`answer` is the index of the step of `chain` that answers it. `as_of` (only for that
    kind): the moment asked about. `period` (history only, optional): the span the question
    names ("in 2024"), which the answer's validity covers."""

    id: str
    chain: str
    kind: QuestionKind
    question: str
    answer: int
    as_of: AwareDatetime | None = None
    period: tuple[AwareDatetime, AwareDatetime] | None = None


class Updates(_Frozen):
    people: tuple[Person, ...]
    questions: tuple[UpdateQuestion, ...]


@dataclass(frozen=True)
class Data:
    people: list[Person]
    questions: list[UpdateQuestion]
    notes: dict[str, str]  # note id -> text

    def chains(self) -> dict[str, Chain]:
        return {c.id: c for p in self.people for c in p.chains}


def load_data(directory: Path = DATA) -> Data:
    updates = Updates.model_validate_json((directory / "updates.json").read_bytes())
    notes = Notes.model_validate_json((directory / "notes.json").read_bytes())
    return Data(list(updates.people), list(updates.questions), {n.id: n.text for n in notes.notes})


# What a person's agent is given, in time order: a step of a chain, a distractor, a note.
Ref = tuple[Literal["step", "distractor", "note"], str, int]


@dataclass(frozen=True)
class Written:
    at: datetime
    text: str
    category: Category | None
    ref: Ref  # ("step", chain id, index), ("distractor", group id, index), ("note", id, 0)
    person: str


def writes(person: Person, notes: dict[str, str]) -> list[Written]:
    """Everything written into the person's archival memory, in time order."""
    out = [
        Written(s.at, s.text, s.category, ("step", c.id, i), person.id)
        for c in person.chains
        for i, s in enumerate(c.steps)
    ]
    out += [
        Written(t.at, t.text, t.category, ("distractor", g.id, i), person.id)
        for g in person.distractors
        for i, t in enumerate(g.items)
    ]
    out += [
        Written(n.at, notes.get(n.note, ""), None, ("note", n.note, 0), person.id)
        for n in person.notes
    ]
    return sorted(out, key=lambda w: w.at)


def window(chain: Chain, index: int, asked_at: datetime) -> tuple[datetime, datetime]:
    """When a step is true: from its time until the next step's (or the questions')."""
    steps = chain.steps
    return steps[index].at, steps[index + 1].at if index + 1 < len(steps) else asked_at


def problems(data: Data) -> list[str]:
    """Everything wrong with the data, one line each; empty when it is valid."""
    found: list[str] = []
    owner: dict[str, Person] = {}  # chain id -> its person
    for n, person in enumerate(data.people, 1):
        if person.id != f"p{n:02d}":
            found.append(f"person {person.id} should be p{n:02d}")
        for k, chain in enumerate(person.chains, 1):
            where = f"chain {chain.id}"
            if chain.id != f"{person.id}-c{k:02d}":
                found.append(f"{where} should be {person.id}-c{k:02d}")
            if chain.id in owner:
                found.append(f"{where} appears twice")
            owner[chain.id] = person
            if len(chain.steps) not in STEPS:
                found.append(f"{where} has {len(chain.steps)} steps, not 2 to 4")
            for i in range(1, len(chain.steps)):
                if chain.steps[i].at <= chain.steps[i - 1].at:
                    found.append(f"{where}: step {i} is not later than step {i - 1}")
        own = {c.id for c in person.chains}
        for k, group in enumerate(person.distractors, 1):
            where = f"distractors {group.id}"
            if group.id != f"{person.id}-d{k:02d}":
                found.append(f"{where} should be {person.id}-d{k:02d}")
            if len(group.items) < 2:
                found.append(f"{where}: a group needs two texts or more")
            if group.resembles is not None and group.resembles not in own:
                found.append(f"{where} resembles {group.resembles}, no chain of {person.id}")
        seen_notes = Counter(n.note for n in person.notes)
        for note, times in seen_notes.items():
            if note not in data.notes:
                found.append(f"{person.id}: note {note} is in no notes.json")
            if times > 1:
                found.append(f"{person.id}: note {note} is written {times} times")
        texts: dict[str, Ref] = {}
        moments: dict[datetime, Ref] = {}
        for w in writes(person, data.notes):
            what = "/".join(str(part) for part in w.ref)
            if not w.text.strip():
                found.append(f"{person.id}: {what} is empty")
            key = same_text(w.text)
            if key in texts:
                other = "/".join(str(part) for part in texts[key])
                found.append(f"{person.id}: {what} repeats the text of {other}")
            texts.setdefault(key, w.ref)
            if w.at in moments:
                found.append(f"{person.id}: {what} is written at the same moment as another")
            moments[w.at] = w.ref
            if w.at >= person.asked_at:
                found.append(f"{person.id}: {what} is written after the questions are asked")

    chains = data.chains()
    asked: dict[str, Counter[str]] = {c: Counter() for c in chains}
    for n, q in enumerate(data.questions, 1):
        where = f"question {q.id}"
        if q.id != f"q{n:03d}":
            found.append(f"{where} should be q{n:03d}")
        if q.chain not in chains:
            found.append(f"{where}: no chain {q.chain}")
            continue
        asked_about = chains[q.chain]
        asked[q.chain][q.kind] += 1
        last = len(asked_about.steps) - 1
        if not 0 <= q.answer <= last:
            found.append(f"{where}: {q.chain} has no step {q.answer}")
            continue
        if (q.kind == "as_of") != (q.as_of is not None):
            found.append(f"{where}: as_of is for (and needed by) as_of questions only")
        if q.period is not None and q.kind != "history":
            found.append(f"{where}: only a history question names a period")
        start, end = window(asked_about, q.answer, owner[q.chain].asked_at)
        if q.kind == "current" and q.answer != last:
            found.append(f"{where}: a current question's answer is the last step, {last}")
        if q.kind == "history" and q.answer == last:
            found.append(f"{where}: a history question's answer is an earlier step")
        if q.as_of is not None and not start < q.as_of < end:
            found.append(f"{where}: as_of {q.as_of:%Y-%m-%d} is outside step {q.answer}")
        if q.period is not None:
            since, until = q.period
            if not (since < until and start <= since - MARGIN and until + MARGIN <= end):
                found.append(f"{where}: its period is not inside step {q.answer}'s validity")
    for chain_id, kinds in asked.items():
        if missing := [k for k in QUESTION_KINDS if not kinds[k]]:
            found.append(f"chain {chain_id} has no {' or '.join(missing)} question")
        if kinds["current"] > 1:
            found.append(f"chain {chain_id} has {kinds['current']} current questions")
    return found


def validated(directory: Path = DATA) -> Data:
    """The data, or an exit (status 2) listing every problem with it."""
    data = load_data(directory)
    found = problems(data)
    if found:
        print(f"{directory / 'updates.json'} is invalid:", *found, sep="\n  ", file=sys.stderr)
        raise SystemExit(2)
    return data


def describe(data: Data) -> dict[str, Any]:
    chains = [c for p in data.people for c in p.chains]
    groups = [g for p in data.people for g in p.distractors]
    return {
        "people": len(data.people),
        "chains": len(chains),
        "steps": sum(len(c.steps) for c in chains),
        "attributes": len({c.attribute for c in chains}),
        "distractor_groups": len(groups),
        "distractor_texts": sum(len(g.items) for g in groups),
        "notes": sum(len(p.notes) for p in data.people),
        "questions": dict(Counter(q.kind for q in data.questions)),
    }


# --- what the engine did -------------------------------------------------------------


@dataclass(frozen=True)
class Supersession:
    old: Written
    new: Written
    person: str

    def line(self) -> str:
        def said(w: Written) -> str:
            return f"{w.text!r} ({w.at:%Y-%m-%d}, {'/'.join(str(p) for p in w.ref[1:])})"

        return f"{self.person}: {said(self.old)} -> {said(self.new)}"


@dataclass(frozen=True)
class Missed:
    """Consecutive steps of a chain where the older was not superseded by the newer; `by`
    is what superseded it instead, if anything did."""

    old: Written
    new: Written
    person: str
    by: Written | None

    def line(self) -> str:
        instead = f" (ended instead by {self.by.text!r})" if self.by else ""
        return f"{self.person}: {self.old.text!r} -> {self.new.text!r}{instead}"


@dataclass
class Supersessions:
    wrong: list[Supersession] = field(default_factory=list)
    skipped: list[Supersession] = field(default_factory=list)
    missed: list[Missed] = field(default_factory=list)
    pairs: int = 0  # consecutive steps: the supersessions there should be

    def as_json(self) -> dict[str, Any]:
        def one(s: Supersession | Missed) -> dict[str, Any]:
            out = {"person": s.person, "old": s.old.text, "new": s.new.text}
            out |= {
                "old_ref": "/".join(map(str, s.old.ref)),
                "new_ref": "/".join(map(str, s.new.ref)),
            }
            if isinstance(s, Missed) and s.by is not None:
                out["ended_by"] = s.by.text
            return out

        return {
            "pairs": self.pairs,
            "wrong": [one(s) for s in self.wrong],
            "skipped": [one(s) for s in self.skipped],
            "missed": [one(m) for m in self.missed],
        }


def judge(
    people: Sequence[Person], written: dict[str, Written], ended: dict[str, str]
) -> Supersessions:
    """Sort the supersessions made (`ended`: old memory id -> the id that superseded it;
    `written`: memory id -> what it holds) into right, wrong and skipped, and find the
    missed ones."""
    by_ref = {w.ref: memory_id for memory_id, w in written.items()}
    out = Supersessions()
    for old_id, new_id in sorted(ended.items(), key=lambda e: written[e[1]].at):
        old, new = written[old_id], written[new_id]
        made = Supersession(old, new, new.person)
        same_chain = old.ref[0] == new.ref[0] == "step" and old.ref[1] == new.ref[1]
        if same_chain and new.ref[2] == old.ref[2] + 1:
            continue
        if same_chain and new.ref[2] > old.ref[2]:
            out.skipped.append(made)
        else:
            out.wrong.append(made)
    for person in people:
        for chain in person.chains:
            for i in range(len(chain.steps) - 1):
                out.pairs += 1
                old_id = by_ref[("step", chain.id, i)]
                new_id = by_ref[("step", chain.id, i + 1)]
                got = ended.get(old_id)
                if got != new_id:
                    by = written[got] if got else None
                    out.missed.append(Missed(written[old_id], written[new_id], person.id, by))
    return out


# --- the engine: all coupling to it lives in `load` and `ask` ----------------------------


@dataclass(frozen=True)
class Loaded:
    """Every person's texts in a fresh agent of one engine, as one writer wrote them."""

    engine: "SearchEngine"
    clock: FrozenClock
    agents: dict[str, str]  # person id -> agent id
    written: dict[str, Written]  # memory id -> what it holds
    ended: dict[str, str]  # superseded memory id -> the memory id that superseded it
    seconds: float

    @property
    def semantic(self) -> bool:
        return self.engine.embedder is not None


async def load(
    repos: Repositories, engine: "SearchEngine", clock: FrozenClock, data: Data, writer: Writer
) -> Loaded:
    """Write each person's texts into a fresh agent, in time order with the clock at each
    text's time; `writer` decides what supersedes what. A text stored already (the same
    text once normalized) stops the run: every text must be its own memory."""
    from api.agents import service as agent_service
    from api.agents.schemas import AgentCreate
    from api.memory import archival

    began = time.perf_counter()
    agents: dict[str, str] = {}
    written: dict[str, Written] = {}
    ended: dict[str, str] = {}
    for person in data.people:
        texts = writes(person, data.notes)
        clock.set(texts[0].at.timestamp())
        name = f"updates-{person.id}-{uuid.uuid4().hex[:8]}"
        owner = f"{person.id}@updates.example"
        agent, _ = await agent_service.create(
            repos, owner, AgentCreate(name=name), clock, architectures=ARCHITECTURES
        )
        agents[person.id] = agent.agent_id
        memory_of: dict[Ref, str] = {}
        for w in texts:
            clock.set(w.at.timestamp())
            kind, where, index = w.ref
            before = memory_of.get((kind, where, index - 1)) if kind == "step" else None
            inserted = await archival.insert(
                repos,
                engine,
                agent.agent_id,
                w.text,
                category=w.category,
                supersedes=[before] if writer == "explicit" and before else [],
                automatic=writer == "automatic",
            )
            memory_id = inserted.memory.memory_id
            if not inserted.created:
                raise ValueError(
                    f"{person.id}: {w.ref} was stored already, as {written[memory_id].ref}"
                )
            memory_of[w.ref] = memory_id
            written[memory_id] = w
            for old in inserted.replaced:
                ended[old.memory_id] = memory_id
    return Loaded(engine, clock, agents, written, ended, time.perf_counter() - began)


@dataclass(frozen=True)
class Answered:
    question: UpdateQuestion
    top: tuple[Ref, ...]  # what the results hold, best first
    seconds: float

    @property
    def right(self) -> bool:
        return bool(self.top) and self.top[0] == ("step", self.question.chain, self.question.answer)

    @property
    def stale(self) -> bool:
        """The first result is an older step of the question's chain."""
        if not self.top:
            return False
        kind, where, index = self.top[0]
        return kind == "step" and where == self.question.chain and index < self.question.answer


async def ask(
    loaded: Loaded, person: Person, question: UpdateQuestion, mode: SearchMode, limit: int
) -> Answered:
    from api.memory import archival

    loaded.clock.set(person.asked_at.timestamp())
    start = time.perf_counter()
    page = await archival.search(
        loaded.engine,
        loaded.agents[person.id],
        question.question,
        page_size=limit,
        mode=mode,
        as_of=question.as_of,
    )
    seconds = time.perf_counter() - start
    top = tuple(loaded.written[m.memory.memory_id].ref for m in page.matches)
    return Answered(question, top, seconds)


# --- running -------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    mode: str
    backend: str
    writer: str
    answered: list[Answered]
    supersessions: Supersessions

    def share(self, kind: QuestionKind, stale: bool = False) -> float:
        of_kind = [a for a in self.answered if a.question.kind == kind]
        if not of_kind:
            return 0.0
        return statistics.fmean(float(a.stale if stale else a.right) for a in of_kind)

    @property
    def empty(self) -> float:
        """The share of questions that got no result at all."""
        return statistics.fmean(float(not a.top) for a in self.answered) if self.answered else 0.0

    @property
    def ms_per_query(self) -> float:
        return statistics.fmean(a.seconds * 1000 for a in self.answered) if self.answered else 0.0

    def as_json(self) -> dict[str, Any]:
        s = self.supersessions
        return {
            "mode": self.mode,
            "backend": self.backend,
            "writer": self.writer,
            "questions": dict(Counter(a.question.kind for a in self.answered)),
            "current@1": round(self.share("current"), 4),
            "stale@1": round(self.share("current", stale=True), 4),
            "history@1": round(self.share("history"), 4),
            "as_of@1": round(self.share("as_of"), 4),
            "no_result": round(self.empty, 4),
            "wrong": len(s.wrong),
            "skipped": len(s.skipped),
            "missed": len(s.missed),
            "pairs": s.pairs,
            "ms_per_query": round(self.ms_per_query, 2),
        }


@dataclass
class Measured:
    rows: list[Row] = field(default_factory=list)
    supersessions: dict[tuple[str, str], Supersessions] = field(default_factory=dict)


async def run_writer(
    backend: str,
    writer: Writer,
    modes: Sequence[SearchMode],
    data: Data,
    limit: int,
) -> tuple[Supersessions, list[Row]]:
    """One backend, one writer: every text written, then every question in every mode."""
    from api.search.engine import SearchEngine

    clock = FrozenClock()
    rows: list[Row] = []
    async with sqlite_table(clock) as table:
        repos = Repositories.over(table)
        engine = SearchEngine(repos.search, await started(backend), clock)
        try:
            loaded = await load(repos, engine, clock, data, writer)
            texts = len(loaded.written)
            print(
                f"{backend}/{writer}: {texts} texts written in {loaded.seconds:.1f} s, "
                f"{len(loaded.ended)} superseded",
                file=sys.stderr,
            )
            judged = judge(data.people, loaded.written, loaded.ended)
            person_of = {c.id: p for p in data.people for c in p.chains}
            for mode in modes:
                if mode == "semantic" and not loaded.semantic:
                    continue  # no vectors to search
                answered = [
                    await ask(loaded, person_of[q.chain], q, mode, limit) for q in data.questions
                ]
                rows.append(Row(mode, backend, writer, answered, judged))
        finally:
            await engine.aclose()
    return judged, rows


async def measure(
    backends: Sequence[str],
    writers: Sequence[Writer],
    modes: Sequence[SearchMode],
    data: Data,
    limit: int,
) -> Measured:
    out = Measured()
    for backend in backends:
        for writer in writers:
            judged, rows = await run_writer(backend, writer, modes, data, limit)
            out.supersessions[(backend, writer)] = judged
            out.rows += rows
    return out


def print_tables(rows: Sequence[Row]) -> None:
    for mode in MODES:
        of_mode = [r for r in rows if r.mode == mode]
        if not of_mode:
            continue
        print(f"mode: {mode}  (top 1; wrong, skipped and missed are supersessions)")
        columns = ["backend", "writer", "current", "stale", "history", "as_of", "none"]
        table = Report(
            [*columns, "wrong", "skipped", "missed", "ms/query"],
            [8, 9, 7, 6, 7, 6, 6, 5, 7, 7, 8],
            text=2,
        )
        for r in of_mode:
            s = r.supersessions
            shares = [r.share("current"), r.share("current", stale=True)]
            shares += [r.share("history"), r.share("as_of"), r.empty]
            counts = [str(len(s.wrong)), str(len(s.skipped)), f"{len(s.missed)}/{s.pairs}"]
            numbers = [f"{v:.3f}" for v in shares]
            table.print([r.backend, r.writer, *numbers, *counts, f"{r.ms_per_query:.2f}"])
        print()


def print_supersessions(measured: Measured) -> None:
    for (backend, writer), s in measured.supersessions.items():
        if writer == "none":
            continue
        lists: list[tuple[str, Sequence[Supersession | Missed]]] = [
            ("wrong: a true fact ended", s.wrong),
            ("skipped: ended by a later step of its chain, not the next", s.skipped),
            ("missed: not superseded by the next step of its chain", s.missed),
        ]
        for title, found in lists:
            if not found:
                continue
            print(f"{backend}/{writer}, {title}: {len(found)}")
            for one in found:
                print(f"  {one.line()}")
            print()


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backends", type=names, default=["static"], help="e.g. static,onnx")
    parser.add_argument("--modes", type=lambda s: names(s, MODES), default=list(MODES))
    parser.add_argument(
        "--writers", type=lambda s: names(s, WRITERS), default=list(DEFAULT_WRITERS)
    )
    parser.add_argument("--limit", type=positive, default=5, help="results asked per question")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--dry-run", action="store_true", help="validate the data only")
    return parser.parse_args(argv)


def as_json(data: Data, measured: Measured, limit: int) -> dict[str, Any]:
    return {
        "data": describe(data),
        "limit": limit,
        "rows": [r.as_json() for r in measured.rows],
        "supersessions": {
            f"{backend}/{writer}": s.as_json()
            for (backend, writer), s in measured.supersessions.items()
        },
        "first_result": {
            f"{r.mode}/{r.backend}/{r.writer}": {
                a.question.id: "/".join(map(str, a.top[0])) if a.top else None for a in r.answered
            }
            for r in measured.rows
        },
    }


async def main(argv: Sequence[str] | None = None, data: Data | None = None) -> int:
    args = arguments(argv)
    data = data or validated()
    modes = [m for m in MODES if m in args.modes]
    writers = [w for w in WRITERS if w in args.writers]
    size = describe(data)
    measured = Measured()
    if not args.dry_run:
        measured = await measure(args.backends, writers, modes, data, args.limit)
    if args.json:
        print(json.dumps(as_json(data, measured, args.limit), indent=2))
        return 0
    asked = ", ".join(f"{n} {kind}" for kind, n in size["questions"].items())
    print(
        f"{size['people']} people, {size['chains']} chains over {size['attributes']} attributes "
        f"({size['steps']} steps), {size['distractor_groups']} distractor groups "
        f"({size['distractor_texts']} texts), {size['notes']} notes; questions: {asked}\n"
    )
    print_tables(measured.rows)
    print_supersessions(measured)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
