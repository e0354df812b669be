"""How well memory search finds the messages and notes that answer a person's question.

The data (bench/recall_data/, described in its README) is our own: a few users' chat
histories with an assistant, over about a year, and questions whose answers are message ids,
of five kinds: `single`, `multi`, `temporal`, `paraphrase` and `update`. It is validated
before anything runs (ids, roles, times, answers, and that a `paraphrase` question shares no
content word with its answers); on invalid data nothing runs and every problem is listed.

For each embedding backend (`--backends`, default `static`), each user's messages are
recorded into a fresh agent on a temporary SQLite table, with a frozen clock set to each
message's time; then every question is asked in each mode (`--modes`, default lexical,
semantic and hybrid) with the clock at the question's `asked_at`, since temporal questions
say "last May" or "yesterday". The modes share one index per backend; `semantic` needs
vectors, so it is skipped for the backend `none`. `baseline-overlap`, a ranker in this file
that counts the content words a message shares with the question, is always measured: a floor
for the engine, and a check of the metrics (it cannot find a `paraphrase` answer).

Metrics, averaged over questions: R@k is the fraction of a question's answers in the top k,
hit@k whether at least one is, MRR the reciprocal rank of the first answer found (0 if none
is in the `--limit` results). One table per mode and backend, then one by question kind.

Two more sets (`--sets`) ask about one person's notes, stored through the product's service
as the archival memories of one fresh agent: several hundred everyday notes ("Tyre
pressures: 33 psi front, 30 rear"), among them the answers to the `paraphrase` set's
questions, none of which shares a content word with its answer ("what food do I like?" for
"I love pizza with extra mozzarella."); and the `unrelated` set's questions, which no note
answers ("What kind of tea do I drink?" among coffee notes), where the right result is
nothing. For the paraphrase set: R@1, R@5, R@10, MRR and the share of questions that got no
result at all; for the unrelated set: the share of questions that got any result (near the
notes' topics, off them, and all), and how many results they got (in the top `--limit`, and
the engine's total). A mode after the first finds the question's vector among the
engine's recent ones, so its ms/query leaves out the embedding of the question.

The `twofact` set asks questions whose answer needs two notes: `bridge`, where one note
names what the question only describes and another says the asked thing of that name
("What's my landlord's mobile number?" over "Landlord is Mr Patel; rent is £950" and "Mr
Patel's mobile: 07700 900 456"), and `both`, two things asked at once ("What's my blood
type and what am I allergic to?"). Its own notes (and look-alikes: other facts of the same
people) are stored after notes.json's in a fresh agent of their own. Per mode and backend,
overall and per kind: all@5 and all@10, the share of questions with every one of their
notes in the top 5 or 10, then R@1/5/10 and MRR (of the first note found).

    uv run python bench/recall.py [--sets conversations,paraphrase,unrelated,twofact]
                                  [--backends static,onnx,none] [--modes lexical,hybrid]
                                  [--kinds single,temporal] [--limit 10] [--json] [--dry-run]

A backend is any name the engine's factory knows (`api.embeddings.factory`), passed as
given. `--kinds` chooses among the conversation questions only. `--dry-run` validates the
data and measures the baseline only. Exits 2 when the data is invalid, and 1, after
printing the baseline, when the search engine cannot be imported.
"""

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
import unicodedata
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict

from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.runtime.architectures.registry import ARCHITECTURES
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Table
from bench.report import Report

if TYPE_CHECKING:
    from api.embeddings.base import Embedder
    from api.search.engine import SearchEngine

DATA = Path(__file__).parent / "recall_data"
Kind = Literal["single", "multi", "temporal", "paraphrase", "update"]
SearchMode = Literal["lexical", "semantic", "hybrid"]
DataSet = Literal["conversations", "paraphrase", "unrelated", "twofact"]
KINDS: tuple[Kind, ...] = ("single", "multi", "temporal", "paraphrase", "update")
MODES: tuple[SearchMode, ...] = ("lexical", "semantic", "hybrid")
SETS: tuple[DataSet, ...] = ("conversations", "paraphrase", "unrelated", "twofact")
BASELINE = "baseline-overlap"
KS = (1, 5, 10)
ALL_KS = (5, 10)  # a two-fact question is answered when all its notes are in the top k
SESSION_MESSAGES = range(6, 21)

# --- the data ------------------------------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ChatMessage(_Frozen):
    id: str
    role: Literal["user", "assistant"]
    created_at: AwareDatetime
    content: str


class Session(_Frozen):
    id: str
    started_at: AwareDatetime
    messages: tuple[ChatMessage, ...]


class User(_Frozen):
    id: str
    name: str
    sessions: tuple[Session, ...]

    def messages(self) -> list[ChatMessage]:
        return [m for s in self.sessions for m in s.messages]


class Question(_Frozen):
    id: str
    user: str
    kind: Kind
    asked_at: AwareDatetime
    question: str
    answers: tuple[str, ...]


class Conversations(_Frozen):
    users: tuple[User, ...]


class Questions(_Frozen):
    questions: tuple[Question, ...]


def load_data(directory: Path = DATA) -> tuple[list[User], list[Question]]:
    users = Conversations.model_validate_json((directory / "conversations.json").read_bytes())
    questions = Questions.model_validate_json((directory / "questions.json").read_bytes())
    return list(users.users), list(questions.questions)


# Lower-cased, split on anything but letters and digits, English stop words dropped (NLTK's
# list; its contractions are split already) and a light stem: a trailing s, es, ed or ing,
# then a trailing e, so that "likes", "liked" and "like" are one word. A `paraphrase`
# question shares no such word with any of its answers. (Digits count as words, stricter than
# the brief's letters-only split, because BM25 keeps them: "13.1" would meet "1 hour".)
_NLTK_STOP_WORDS = """
    a about above after again against ain all am an and any are aren as at be because been
    before being below between both but by can couldn d did didn do does doesn doing don
    down during each few for from further had hadn has hasn have haven having he her here
    hers herself him himself his how i if in into is isn it its itself just ll m ma me
    mightn more most mustn my myself needn no nor not now o of off on once only or other our
    ours ourselves out over own re s same shan she should shouldn so some such t than that
    the their theirs them themselves then there these they this those through to too under
    until up ve very was wasn we were weren what when where which while who whom why will
    with won wouldn y you your yours yourself yourselves
"""
STOP_WORDS = frozenset(_NLTK_STOP_WORDS.split())
_WORD = re.compile(r"[^\W_]+")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS}


def problems(users: Sequence[User], questions: Sequence[Question]) -> list[str]:
    """Everything wrong with the data, one line each; empty when it is valid."""
    found: list[str] = []
    owner: dict[str, str] = {}  # message id -> user id
    texts: dict[str, str] = {}
    last: dict[str, float] = {}  # user id -> the time of their last message
    for user in users:
        if user.id in last:
            found.append(f"user {user.id} appears twice")
        last[user.id] = 0.0
        previous = None
        for n, session in enumerate(user.sessions, 1):
            if session.id != f"{user.id}-s{n}":
                found.append(f"session {session.id} should be {user.id}-s{n}")
            if previous is not None and session.started_at <= previous:
                found.append(f"session {session.id} starts before the one it follows")
            previous = session.started_at
            if len(session.messages) not in SESSION_MESSAGES:
                found.append(f"session {session.id} has {len(session.messages)} messages")
            at = session.started_at
            for k, message in enumerate(session.messages, 1):
                if message.id != f"{session.id}-m{k}":
                    found.append(f"message {message.id} should be {session.id}-m{k}")
                if message.id in owner:
                    found.append(f"message id {message.id} appears twice")
                if message.role != ("user" if k % 2 else "assistant"):
                    found.append(f"message {message.id}: roles must alternate, user first")
                if message.created_at < at:
                    found.append(f"message {message.id} is older than the one before it")
                if not message.content.strip():
                    found.append(f"message {message.id} is empty")
                at = message.created_at
                owner[message.id] = user.id
                texts[message.id] = message.content
                last[user.id] = max(last[user.id], at.timestamp())

    seen: set[str] = set()
    for q in questions:
        where = f"question {q.id}"
        if q.id in seen:
            found.append(f"{where} appears twice")
        seen.add(q.id)
        if q.user not in last:
            found.append(f"{where}: no user {q.user}")
            continue
        if q.asked_at.timestamp() <= last[q.user]:
            found.append(f"{where} is asked before {q.user}'s last message")
        if not q.answers or len(set(q.answers)) != len(q.answers):
            found.append(f"{where}: answers must be present and distinct")
        if q.kind == "multi" and len(q.answers) < 2:
            found.append(f"{where}: a multi question needs several answers")
        for answer in q.answers:
            if owner.get(answer) != q.user:
                found.append(f"{where}: answer {answer} is no message of {q.user}")
            elif q.kind == "paraphrase":
                shared = content_words(q.question) & content_words(texts[answer])
                if shared:
                    found.append(f"{where} shares {sorted(shared)} with its answer {answer}")
    return found


def validated(directory: Path = DATA) -> tuple[list[User], list[Question]]:
    """The data, or an exit (status 2) listing every problem with it."""
    users, questions = load_data(directory)
    found = problems(users, questions)
    if found:
        print(f"{directory} is invalid:", *found, sep="\n  ", file=sys.stderr)
        raise SystemExit(2)
    return users, questions


# --- the notes: one person's archival memory, and questions about it ----------------


class Note(_Frozen):
    id: str
    text: str


class NoteQuestion(_Frozen):
    """A question of the `paraphrase` set: no content word in common with its answers."""

    id: str
    question: str
    answers: tuple[str, ...]
    kind: ClassVar[Kind] = "paraphrase"


class Unanswerable(_Frozen):
    """A question of the `unrelated` set: no note answers it. `absent` are words of the
    question that no note holds (checked); `near`, whether it is on a topic the notes are
    about (tea among coffee notes, a sister where a brother is mentioned)."""

    id: str
    question: str
    near: bool
    absent: tuple[str, ...]


class Notes(_Frozen):
    notes: tuple[Note, ...]


class NoteQuestions(_Frozen):
    questions: tuple[NoteQuestion, ...]


class Unanswerables(_Frozen):
    questions: tuple[Unanswerable, ...]


@dataclass(frozen=True)
class NoteSets:
    notes: list[Note]
    paraphrase: list[NoteQuestion]
    unrelated: list[Unanswerable]


def load_notes(directory: Path = DATA) -> NoteSets:
    notes = Notes.model_validate_json((directory / "notes.json").read_bytes())
    asked = NoteQuestions.model_validate_json((directory / "paraphrase.json").read_bytes())
    empty = Unanswerables.model_validate_json((directory / "unrelated.json").read_bytes())
    return NoteSets(list(notes.notes), list(asked.questions), list(empty.questions))


def same_text(text: str) -> str:
    """What archival memory counts as one text: case, spacing and Unicode forms folded."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def note_problems(sets: NoteSets) -> list[str]:
    """Everything wrong with the note sets, one line each; empty when they are valid."""
    found: list[str] = []
    texts: dict[str, str] = {}  # note id -> text
    seen_texts: dict[str, str] = {}  # same_text -> note id
    for n, note in enumerate(sets.notes, 1):
        if note.id != f"n{n:03d}":
            found.append(f"note {note.id} should be n{n:03d}")
        if not note.text.strip():
            found.append(f"note {note.id} is empty")
        key = same_text(note.text)
        if key in seen_texts:
            found.append(f"note {note.id} repeats note {seen_texts[key]}")
        seen_texts.setdefault(key, note.id)
        texts[note.id] = note.text
    held = set().union(*(content_words(t) for t in texts.values())) if texts else set()

    seen: set[str] = set()
    for q in sets.paraphrase:
        where = f"question {q.id}"
        if q.id in seen:
            found.append(f"{where} appears twice")
        seen.add(q.id)
        if not q.answers or len(set(q.answers)) != len(q.answers):
            found.append(f"{where}: answers must be present and distinct")
        for answer in q.answers:
            if answer not in texts:
                found.append(f"{where}: answer {answer} is no note")
            elif shared := content_words(q.question) & content_words(texts[answer]):
                found.append(f"{where} shares {sorted(shared)} with its answer {answer}")
    for u in sets.unrelated:
        where = f"question {u.id}"
        if u.id in seen:
            found.append(f"{where} appears twice")
        seen.add(u.id)
        absent = set().union(*(content_words(w) for w in u.absent)) if u.absent else set()
        if not absent:
            found.append(f"{where}: name the words of it that no note holds (absent)")
        if extra := absent - content_words(u.question):
            found.append(f"{where}: absent words {sorted(extra)} are not in the question")
        if held_here := absent & held:
            found.append(f"{where}: notes hold {sorted(held_here)}, absent from them it says")
    return found


def validated_notes(directory: Path = DATA) -> NoteSets:
    """The note sets, or an exit (status 2) listing every problem with them."""
    sets = load_notes(directory)
    found = note_problems(sets)
    if found:
        print(f"{directory} is invalid:", *found, sep="\n  ", file=sys.stderr)
        raise SystemExit(2)
    return sets


# --- two facts: questions whose answer needs two notes -------------------------------


class TwoFactQuestion(_Frozen):
    """A question of the `twofact` set: its answer needs every one of its notes. `bridge`:
    one note names what the question only describes ("my landlord" is Mr Patel), another
    says the asked thing of that name; `both`: two things asked at once."""

    id: str
    kind: Literal["bridge", "both"]
    question: str
    answers: tuple[str, ...]

    def as_note_question(self) -> NoteQuestion:
        """The question as the metrics shared with the paraphrase set take it."""
        return NoteQuestion(id=self.id, question=self.question, answers=self.answers)


class TwoFacts(_Frozen):
    notes: tuple[Note, ...]  # stored after notes.json's, ids t001, t002, ...
    questions: tuple[TwoFactQuestion, ...]


def load_twofact(directory: Path = DATA) -> TwoFacts:
    return TwoFacts.model_validate_json((directory / "twofact.json").read_bytes())


def twofact_problems(sets: NoteSets, twofact: TwoFacts) -> list[str]:
    """Everything wrong with the two-fact set, one line each; empty when it is valid. Its
    notes join notes.json's in one agent, so they must not repeat one, and hold no word
    the unrelated set says no note holds (the two sets could then share the agent)."""
    found: list[str] = []
    seen_texts = {same_text(n.text): n.id for n in sets.notes}
    absent = set().union(*(content_words(w) for u in sets.unrelated for w in u.absent))
    for n, note in enumerate(twofact.notes, 1):
        if note.id != f"t{n:03d}":
            found.append(f"note {note.id} should be t{n:03d}")
        key = same_text(note.text)
        if not key:
            found.append(f"note {note.id} is empty")
        elif key in seen_texts:
            found.append(f"note {note.id} repeats note {seen_texts[key]}")
        seen_texts.setdefault(key, note.id)
        if held := content_words(note.text) & absent:
            found.append(f"note {note.id} holds {sorted(held)}, absent from every note")
    known = {n.id for n in sets.notes} | {n.id for n in twofact.notes}
    for n, q in enumerate(twofact.questions, 1):
        where = f"question {q.id}"
        if q.id != f"f{n:03d}":
            found.append(f"{where} should be f{n:03d}")
        if len(q.answers) < 2 or len(set(q.answers)) != len(q.answers):
            found.append(f"{where}: a two-fact question needs two distinct notes or more")
        found += [f"{where}: answer {a} is no note" for a in q.answers if a not in known]
    return found


def validated_twofact(sets: NoteSets, directory: Path = DATA) -> TwoFacts:
    """The two-fact set, or an exit (status 2) listing every problem with it."""
    twofact = load_twofact(directory)
    found = twofact_problems(sets, twofact)
    if found:
        print(f"{directory / 'twofact.json'} is invalid:", *found, sep="\n  ", file=sys.stderr)
        raise SystemExit(2)
    return twofact


# --- metrics -------------------------------------------------------------------------


@dataclass(frozen=True)
class Scored:
    """One question answered by one ranker."""

    question: Question | NoteQuestion
    recall: tuple[float, ...]  # at each of KS
    hit: tuple[bool, ...]
    first: int | None  # the 1-based rank of the first answer found
    seconds: float

    @property
    def reciprocal_rank(self) -> float:
        return 1 / self.first if self.first else 0.0


def score(question: Question | NoteQuestion, ranked: Sequence[str], seconds: float = 0.0) -> Scored:
    answers = set(question.answers)
    ranks = [i for i, message_id in enumerate(ranked, 1) if message_id in answers]
    found_at = [sum(1 for r in ranks if r <= k) for k in KS]
    return Scored(
        question,
        recall=tuple(n / len(answers) for n in found_at),
        hit=tuple(n > 0 for n in found_at),
        first=ranks[0] if ranks else None,
        seconds=seconds,
    )


@dataclass(frozen=True)
class Row:
    mode: str
    backend: str
    kind: str  # "all" or one of KINDS
    questions: int
    recall: tuple[float, ...]
    hit: tuple[float, ...]
    mrr: float
    ms_per_query: float

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": self.mode,
            "backend": self.backend,
            "kind": self.kind,
            "questions": self.questions,
        }
        out |= {f"R@{k}": round(r, 4) for k, r in zip(KS, self.recall, strict=True)}
        out |= {f"hit@{k}": round(h, 4) for k, h in zip(KS, self.hit, strict=True)}
        return out | {"MRR": round(self.mrr, 4), "ms_per_query": round(self.ms_per_query, 2)}


def summarize(mode: str, backend: str, kind: str, scored: Sequence[Scored]) -> Row:
    def mean(values: Iterable[float]) -> float:
        return statistics.fmean(values) if scored else 0.0

    return Row(
        mode,
        backend,
        kind,
        len(scored),
        recall=tuple(mean(s.recall[i] for s in scored) for i in range(len(KS))),
        hit=tuple(mean(float(s.hit[i]) for s in scored) for i in range(len(KS))),
        mrr=mean(s.reciprocal_rank for s in scored),
        ms_per_query=mean(s.seconds * 1000 for s in scored),
    )


@dataclass(frozen=True)
class Run:
    """Every question asked of one mode on one backend."""

    mode: str
    backend: str
    scored: list[Scored]

    def rows(self) -> list[Row]:
        overall = [summarize(self.mode, self.backend, "all", self.scored)]
        return overall + [
            summarize(self.mode, self.backend, kind, of_kind)
            for kind in KINDS
            if (of_kind := [s for s in self.scored if s.question.kind == kind])
        ]


@dataclass(frozen=True)
class Returned:
    """What one ranker returned for one question of the note sets."""

    ranked: tuple[str, ...]  # note ids, best first, at most `--limit`
    total: int  # every match the ranker counted, past the limit too
    seconds: float


@dataclass(frozen=True)
class ParaphraseRow:
    mode: str
    backend: str
    questions: int
    recall: tuple[float, ...]  # at each of KS
    mrr: float
    empty: float  # the share of questions that got no result at all
    ms_per_query: float

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "backend": self.backend}
        out |= {"questions": self.questions}
        out |= {f"R@{k}": round(r, 4) for k, r in zip(KS, self.recall, strict=True)}
        out |= {"MRR": round(self.mrr, 4), "empty": round(self.empty, 4)}
        return out | {"ms_per_query": round(self.ms_per_query, 2)}


@dataclass(frozen=True)
class UnrelatedRow:
    mode: str
    backend: str
    questions: int
    answered: float  # the share of questions that got any result (the right answer is none)
    near: float  # the same, of the questions near the notes' topics
    off: float  # and of those off them
    returned: float  # results per question, in the top `--limit`
    total: float  # results per question, as the ranker counted them
    ms_per_query: float

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "backend": self.backend}
        out |= {"questions": self.questions, "answered": round(self.answered, 4)}
        out |= {"answered_near": round(self.near, 4), "answered_off": round(self.off, 4)}
        out |= {"mean_returned": round(self.returned, 3), "mean_total": round(self.total, 3)}
        return out | {"ms_per_query": round(self.ms_per_query, 2)}


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


@dataclass(frozen=True)
class TwoFactRow:
    mode: str
    backend: str
    kind: str  # "all", "bridge" or "both"
    questions: int
    every: tuple[float, ...]  # at each of ALL_KS: the share with all their notes in the top k
    recall: tuple[float, ...]  # at each of KS
    mrr: float  # of the first of its notes found
    ms_per_query: float

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "backend": self.backend, "kind": self.kind}
        out |= {"questions": self.questions}
        out |= {f"all@{k}": round(a, 4) for k, a in zip(ALL_KS, self.every, strict=True)}
        out |= {f"R@{k}": round(r, 4) for k, r in zip(KS, self.recall, strict=True)}
        return out | {"MRR": round(self.mrr, 4), "ms_per_query": round(self.ms_per_query, 2)}


def twofact_row(
    mode: str, backend: str, kind: str, asked: Sequence[tuple[TwoFactQuestion, Returned]]
) -> TwoFactRow:
    def every(q: TwoFactQuestion, got: Returned, k: int) -> float:
        return float(set(q.answers) <= set(got.ranked[:k]))

    scored = [(q, got, score(q.as_note_question(), got.ranked, got.seconds)) for q, got in asked]
    return TwoFactRow(
        mode,
        backend,
        kind,
        len(asked),
        every=tuple(_mean([every(q, got, k) for q, got, _ in scored]) for k in ALL_KS),
        recall=tuple(_mean([s.recall[i] for _, _, s in scored]) for i in range(len(KS))),
        mrr=_mean([s.reciprocal_rank for _, _, s in scored]),
        ms_per_query=_mean([got.seconds * 1000 for _, got, _ in scored]),
    )


@dataclass(frozen=True)
class NoteRun:
    """The note sets' questions asked of one mode on one backend."""

    mode: str
    backend: str
    paraphrase: list[tuple[NoteQuestion, Returned]]
    unrelated: list[tuple[Unanswerable, Returned]]
    twofact: list[tuple[TwoFactQuestion, Returned]] = field(default_factory=list)

    def twofact_rows(self) -> list[TwoFactRow]:
        if not self.twofact:
            return []
        kinds = sorted({q.kind for q, _ in self.twofact})
        rows = [twofact_row(self.mode, self.backend, "all", self.twofact)]
        return rows + [
            twofact_row(self.mode, self.backend, k, [p for p in self.twofact if p[0].kind == k])
            for k in kinds
        ]

    def paraphrase_row(self) -> ParaphraseRow | None:
        if not self.paraphrase:
            return None
        scored = [score(q, got.ranked, got.seconds) for q, got in self.paraphrase]
        row = summarize(self.mode, self.backend, "all", scored)
        return ParaphraseRow(
            self.mode,
            self.backend,
            row.questions,
            row.recall,
            row.mrr,
            empty=_mean([float(not got.ranked) for _, got in self.paraphrase]),
            ms_per_query=row.ms_per_query,
        )

    def unrelated_row(self) -> UnrelatedRow | None:
        if not self.unrelated:
            return None

        def answered(near: bool | None) -> float:
            chosen = [got for u, got in self.unrelated if near is None or u.near == near]
            return _mean([float(bool(got.ranked)) for got in chosen])

        got = [g for _, g in self.unrelated]
        return UnrelatedRow(
            self.mode,
            self.backend,
            len(got),
            answered=answered(None),
            near=answered(True),
            off=answered(False),
            returned=_mean([len(g.ranked) for g in got]),
            total=_mean([g.total for g in got]),
            ms_per_query=_mean([g.seconds * 1000 for g in got]),
        )


# --- the baseline --------------------------------------------------------------------


def overlap_ranking(messages: Sequence[ChatMessage], question: str, limit: int) -> list[str]:
    """`baseline-overlap`: messages sharing the most content words with the question, the
    newest first among equals; a message sharing none is not returned."""
    asked = content_words(question)
    counted = [(len(asked & content_words(m.content)), m) for m in messages]
    ranked = sorted(
        ((n, m) for n, m in counted if n), key=lambda p: (p[0], p[1].created_at), reverse=True
    )
    return [m.id for _, m in ranked[:limit]]


def run_baseline(users: Sequence[User], questions: Sequence[Question], limit: int) -> Run:
    messages = {u.id: u.messages() for u in users}
    scored = []
    for q in questions:
        start = time.perf_counter()
        ranked = overlap_ranking(messages[q.user], q.question, limit)
        scored.append(score(q, ranked, time.perf_counter() - start))
    return Run(BASELINE, "-", scored)


def note_overlap_ranking(notes: Sequence[Note], question: str, limit: int) -> Returned:
    """`baseline-overlap` over notes: those sharing the most content words with the
    question, the later stored first among equals; a note sharing none is not returned."""
    start = time.perf_counter()
    asked = content_words(question)
    counted = [(len(asked & content_words(n.text)), i, n.id) for i, n in enumerate(notes)]
    ranked = sorted((c for c in counted if c[0]), reverse=True)
    found = tuple(note_id for _, _, note_id in ranked[:limit])
    return Returned(found, len(ranked), time.perf_counter() - start)


def run_note_baseline(sets: NoteSets, chosen: Sequence[DataSet], limit: int) -> NoteRun:
    def ask(question: str) -> Returned:
        return note_overlap_ranking(sets.notes, question, limit)

    paraphrase = [(q, ask(q.question)) for q in sets.paraphrase] if "paraphrase" in chosen else []
    unrelated = [(u, ask(u.question)) for u in sets.unrelated] if "unrelated" in chosen else []
    return NoteRun(BASELINE, "-", paraphrase, unrelated)


def run_twofact_baseline(sets: NoteSets, twofact: TwoFacts, limit: int) -> NoteRun:
    notes = [*sets.notes, *twofact.notes]
    asked = [(q, note_overlap_ranking(notes, q.question, limit)) for q in twofact.questions]
    return NoteRun(BASELINE, "-", [], [], asked)


# --- the engine: all coupling to it lives in `load`, `rank`, `load_notes_into` and
# `rank_note` -------------------------------------------------------------------------


@dataclass(frozen=True)
class Indexed:
    """Every user's messages in a fresh agent of one engine."""

    repos: Repositories
    engine: "SearchEngine"
    agents: dict[str, str]  # user id -> agent id
    clock: FrozenClock
    semantic: bool  # whether the engine has vectors to search


def owner_of(user: str) -> str:
    return f"{user}@recall.example"


@asynccontextmanager
async def load(
    table: Table, backend: str, clock: FrozenClock, users: Sequence[User]
) -> AsyncIterator[Indexed]:
    """Record each user's messages into a fresh agent, one conversation per session, with
    the clock at each message's time; the engine (and its embedder) is closed on leaving.
    Imported here, so that `--dry-run` runs whatever state the engine is in."""
    from api.agents import service as agent_service
    from api.agents.schemas import AgentCreate
    from api.conversations import service as conversations
    from api.conversations.messages import service as messages
    from api.conversations.messages.models import Message
    from api.embeddings.factory import get_embedding_backend
    from api.search.engine import SearchEngine

    repos = Repositories.over(table)
    engine = SearchEngine(repos.search, get_embedding_backend(backend), clock)
    try:
        agents: dict[str, str] = {}
        for user in users:
            owner = owner_of(user.id)
            name = f"recall-{user.id}-{uuid.uuid4().hex[:8]}"
            agent, _ = await agent_service.create(
                repos, owner, AgentCreate(name=name), clock, architectures=ARCHITECTURES
            )
            agents[user.id] = agent.agent_id
            for session in user.sessions:
                clock.set(session.messages[0].created_at.timestamp())
                conversation = await conversations.create(repos, agent, session.id, clock)
                for said in session.messages:
                    clock.set(said.created_at.timestamp())
                    message = Message(
                        conversation_id=conversation.conversation_id,
                        message_id=said.id,
                        role=said.role,
                        content=said.content,
                        actor_id=user.id if said.role == "user" else None,
                        created_at=said.created_at,
                    )
                    await messages.record(repos, engine, owner, agent.agent_id, message)
        yield Indexed(repos, engine, agents, clock, semantic=engine.embedder is not None)
    finally:
        await engine.aclose()


async def rank(indexed: Indexed, mode: SearchMode, question: Question, limit: int) -> list[str]:
    """The ids of the messages the engine finds for the question, best first, asked at the
    question's time."""
    from api.conversations.messages import service as messages

    indexed.clock.set(question.asked_at.timestamp())
    found = await messages.search(
        indexed.repos,
        indexed.engine,
        owner_of(question.user),
        indexed.agents[question.user],
        question.question,
        mode=mode,
        limit=limit,
    )
    return [hit.message_id for hit in found.hits]


NOTES_STORED_AT = 1_767_600_000.0  # 2026-01-05: one note a minute from then
NOTE_OWNER = "notes@recall.example"


async def started(backend: str) -> "Embedder | None":
    """The engine's factory's backend of that name (None for `none`), started as the server
    starts it, so that loading a model is not counted as the first note's time."""
    from api.embeddings.factory import Startable, get_embedding_backend

    embedder = get_embedding_backend(backend)
    if isinstance(embedder, Startable):
        await embedder.start()
    return embedder


@dataclass(frozen=True)
class NotesIndexed:
    """The notes, as the archival memories of one fresh agent of one engine."""

    engine: "SearchEngine"
    agent_id: str
    note_of: dict[str, str]  # memory id -> note id
    semantic: bool


@asynccontextmanager
async def load_notes_into(
    table: Table, backend: str, clock: FrozenClock, notes: Sequence[Note]
) -> AsyncIterator[NotesIndexed]:
    """Insert every note into a fresh agent's archival memory through the product's service,
    in order, a minute apart; the engine (and its embedder) is closed on leaving."""
    repos = Repositories.over(table)
    from api.agents import service as agent_service
    from api.agents.schemas import AgentCreate
    from api.memory import archival
    from api.search.engine import SearchEngine

    engine = SearchEngine(repos.search, await started(backend), clock)
    try:
        name = f"recall-notes-{uuid.uuid4().hex[:8]}"
        agent, _ = await agent_service.create(
            repos, NOTE_OWNER, AgentCreate(name=name), clock, architectures=ARCHITECTURES
        )
        note_of: dict[str, str] = {}
        for note in notes:
            inserted = await archival.insert(repos, engine, agent.agent_id, note.text)
            memory_id = inserted.memory.memory_id
            if not inserted.created:
                raise ValueError(f"note {note.id} was stored already, as {note_of[memory_id]}")
            note_of[memory_id] = note.id
            clock.advance(60)
        yield NotesIndexed(engine, agent.agent_id, note_of, semantic=engine.embedder is not None)
    finally:
        await engine.aclose()


async def rank_note(indexed: NotesIndexed, mode: SearchMode, question: str, limit: int) -> Returned:
    """The notes archival search finds for the question, best first: its first page of
    `limit`, and the total it counts."""
    from api.memory import archival

    start = time.perf_counter()
    page = await archival.search(
        indexed.engine, indexed.agent_id, question, page_size=limit, mode=mode
    )
    seconds = time.perf_counter() - start
    found = tuple(indexed.note_of[m.memory.memory_id] for m in page.matches)
    return Returned(found, page.total, seconds)


# --- running -------------------------------------------------------------------------


@asynccontextmanager
async def sqlite_table(clock: FrozenClock) -> AsyncIterator[Table]:
    with tempfile.TemporaryDirectory() as directory:
        table = SqliteTable(Path(directory) / "recall.db", "recall", load_definition(), clock=clock)
        await table.create()
        try:
            yield table
        finally:
            await table.close()


async def run_backend(
    backend: str,
    modes: Sequence[SearchMode],
    users: Sequence[User],
    questions: Sequence[Question],
    limit: int,
) -> list[Run]:
    clock = FrozenClock()
    runs: list[Run] = []
    began = time.perf_counter()
    async with sqlite_table(clock) as table, load(table, backend, clock, users) as indexed:
        recorded = sum(len(u.messages()) for u in users)
        took = time.perf_counter() - began
        print(f"{backend}: {recorded} messages recorded in {took:.1f} s", file=sys.stderr)
        for mode in searchable_modes(modes, indexed.semantic):
            scored = []
            for q in questions:
                start = time.perf_counter()
                ranked = await rank(indexed, mode, q, limit)
                scored.append(score(q, ranked[:limit], time.perf_counter() - start))
            runs.append(Run(mode, backend, scored))
    return runs


@asynccontextmanager
async def notes_agent(backend: str, notes: Sequence[Note]) -> AsyncIterator[NotesIndexed]:
    """`notes` in a fresh agent on a temporary table, the clock set to the next day."""
    clock = FrozenClock(NOTES_STORED_AT)
    began = time.perf_counter()
    async with (
        sqlite_table(clock) as table,
        load_notes_into(table, backend, clock, notes) as indexed,
    ):
        took = time.perf_counter() - began
        print(f"{backend}: {len(notes)} notes stored in {took:.1f} s", file=sys.stderr)
        clock.advance(86_400)  # asked the next day
        yield indexed


def searchable_modes(modes: Sequence[SearchMode], semantic: bool) -> list[SearchMode]:
    """`semantic` needs vectors to search (`semantic`: the engine has them)."""
    return [m for m in modes if m != "semantic" or semantic]


async def run_notes_backend(
    backend: str,
    modes: Sequence[SearchMode],
    sets: NoteSets,
    chosen: Sequence[DataSet],
    limit: int,
) -> list[NoteRun]:
    runs: list[NoteRun] = []
    async with notes_agent(backend, sets.notes) as indexed:
        for mode in searchable_modes(modes, indexed.semantic):
            paraphrase = []
            if "paraphrase" in chosen:
                for q in sets.paraphrase:
                    paraphrase.append((q, await rank_note(indexed, mode, q.question, limit)))
            unrelated = []
            if "unrelated" in chosen:
                for u in sets.unrelated:
                    unrelated.append((u, await rank_note(indexed, mode, u.question, limit)))
            runs.append(NoteRun(mode, backend, paraphrase, unrelated))
    return runs


async def run_twofact_backend(
    backend: str, modes: Sequence[SearchMode], sets: NoteSets, twofact: TwoFacts, limit: int
) -> list[NoteRun]:
    """The two-fact questions over notes.json's notes and the set's own, in a fresh agent
    of their own (the other note sets' agent stays as it is)."""
    runs: list[NoteRun] = []
    async with notes_agent(backend, [*sets.notes, *twofact.notes]) as indexed:
        for mode in searchable_modes(modes, indexed.semantic):
            asked = []
            for q in twofact.questions:
                asked.append((q, await rank_note(indexed, mode, q.question, limit)))
            runs.append(NoteRun(mode, backend, [], [], asked))
    return runs


def print_twofact_tables(runs: Sequence[NoteRun]) -> None:
    rows = [row for run in runs for row in run.twofact_rows()]
    if not rows:
        return
    print("twofact: every question needs two notes; all@k, the share with both in the top k")
    metrics = [*(f"all@{k}" for k in ALL_KS), *(f"R@{k}" for k in KS), "MRR"]
    table = Report(
        ["mode", "backend", "kind", "questions", *metrics, "ms/query"],
        [16, 8, 6, 9, *(6 for _ in ALL_KS), *(6 for _ in KS), 6, 8],
        text=3,
    )
    for row in rows:
        numbers = [f"{v:.3f}" for v in (*row.every, *row.recall, row.mrr)]
        speed = f"{row.ms_per_query:.2f}"
        table.print([row.mode, row.backend, row.kind, str(row.questions), *numbers, speed])
    print()


def print_note_tables(runs: Sequence[NoteRun]) -> None:
    paraphrase = [row for run in runs if (row := run.paraphrase_row())]
    unrelated = [u for run in runs if (u := run.unrelated_row())]
    if paraphrase:
        print("paraphrase: every answer shares no content word with its question")
        table = Report(
            ["mode", "backend", "questions", *(f"R@{k}" for k in KS), "MRR", "none", "ms/query"],
            [16, 8, 9, *(6 for _ in KS), 6, 6, 8],
            text=2,
        )
        for p in paraphrase:
            numbers = [f"{v:.3f}" for v in (*p.recall, p.mrr, p.empty)]
            table.print([p.mode, p.backend, str(p.questions), *numbers, f"{p.ms_per_query:.2f}"])
        print()
    if unrelated:
        print("unrelated: no note answers; the share that got anything (lower is better)")
        table = Report(
            ["mode", "backend", "questions", "any", "near", "off", "returned", "total", "ms/query"],
            [16, 8, 9, 6, 6, 6, 8, 6, 8],
            text=2,
        )
        for u in unrelated:
            shares = [f"{v:.3f}" for v in (u.answered, u.near, u.off)]
            means = [f"{u.returned:.2f}", f"{u.total:.1f}", f"{u.ms_per_query:.2f}"]
            table.print([u.mode, u.backend, str(u.questions), *shares, *means])
        print()


def print_tables(rows: Sequence[Row]) -> None:
    metrics = [f"R@{k}" for k in KS] + [f"hit@{k}" for k in KS] + ["MRR"]

    def numbers(row: Row) -> list[str]:
        return [f"{v:.3f}" for v in (*row.recall, *row.hit, row.mrr)]

    table = Report(
        ["mode", "backend", "questions", *metrics, "ms/query"],
        [16, 8, 9] + [6] * len(metrics) + [8],
        text=2,
    )
    for row in rows:
        if row.kind == "all":
            speed = f"{row.ms_per_query:.2f}"
            table.print([row.mode, row.backend, str(row.questions), *numbers(row), speed])
    print()
    by_kind = Report(
        ["mode", "backend", "kind", "questions", *metrics],
        [16, 8, 10, 9] + [6] * len(metrics),
        text=3,
    )
    for row in rows:
        if row.kind != "all":
            by_kind.print([row.mode, row.backend, row.kind, str(row.questions), *numbers(row)])


def describe(users: Sequence[User], questions: Sequence[Question]) -> dict[str, Any]:
    return {
        "users": len(users),
        "sessions": sum(len(u.sessions) for u in users),
        "messages": sum(len(u.messages()) for u in users),
        "questions": dict(Counter(q.kind for q in questions)),
    }


def names(text: str, allowed: Sequence[str] | None = None) -> list[str]:
    chosen = [n.strip() for n in text.split(",") if n.strip()]
    wrong = [n for n in chosen if allowed is not None and n not in allowed]
    if wrong or not chosen:
        raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(allowed or [])}")
    return chosen


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sets", type=lambda s: names(s, SETS), default=list(SETS))
    parser.add_argument("--backends", type=names, default=["static"], help="e.g. static,onnx")
    parser.add_argument("--modes", type=lambda s: names(s, MODES), default=list(MODES))
    parser.add_argument("--kinds", type=lambda s: names(s, KINDS), default=list(KINDS))
    parser.add_argument("--limit", type=positive, default=10, help="results asked per question")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--dry-run", action="store_true", help="validate, then the baseline only")
    return parser.parse_args(argv)


def describe_notes(sets: NoteSets, chosen: Sequence[DataSet]) -> dict[str, Any]:
    out: dict[str, Any] = {"notes": len(sets.notes)}
    if "paraphrase" in chosen:
        targets = {a for q in sets.paraphrase for a in q.answers}
        out |= {"paraphrase_questions": len(sets.paraphrase), "answer_notes": len(targets)}
    if "unrelated" in chosen:
        near = sum(u.near for u in sets.unrelated)
        out |= {"unrelated_questions": len(sets.unrelated), "unrelated_near": near}
    return out


async def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    modes = [m for m in MODES if m in args.modes]
    chosen = [s for s in SETS if s in args.sets]
    note_sets = [s for s in chosen if s in ("paraphrase", "unrelated")]
    asks_twofact = "twofact" in chosen
    users, all_questions = validated() if "conversations" in chosen else ([], [])
    notes = validated_notes() if note_sets or asks_twofact else NoteSets([], [], [])
    twofact = validated_twofact(notes) if asks_twofact else TwoFacts(notes=(), questions=())
    questions = [q for q in all_questions if q.kind in args.kinds]

    runs = [run_baseline(users, questions, args.limit)] if "conversations" in chosen else []
    note_runs = [run_note_baseline(notes, note_sets, args.limit)] if note_sets else []
    twofact_runs = [run_twofact_baseline(notes, twofact, args.limit)] if asks_twofact else []
    missing = None
    if not args.dry_run:
        try:
            for backend in args.backends:
                if "conversations" in chosen:
                    runs += await run_backend(backend, modes, users, questions, args.limit)
                if note_sets:
                    note_runs += await run_notes_backend(
                        backend, modes, notes, note_sets, args.limit
                    )
                if asks_twofact:
                    twofact_runs += await run_twofact_backend(
                        backend, modes, notes, twofact, args.limit
                    )
        except ModuleNotFoundError as e:
            if not (e.name or "").startswith("api."):
                raise
            missing = f"the search engine cannot be imported, so it was not measured: {e}"

    rows = [row for run in runs for row in run.rows()]
    size = describe(users, all_questions)
    note_size = describe_notes(notes, note_sets)
    if args.json:
        result: dict[str, Any] = {"limit": args.limit}
        if "conversations" in chosen:
            ranks = {
                f"{r.mode}/{r.backend}": {s.question.id: s.first for s in r.scored} for r in runs
            }
            result = {
                "data": size,
                "limit": args.limit,
                "rows": [row.as_json() for row in rows],
                "first_answer_rank": ranks,
            }
        if note_sets:
            result["notes"] = notes_json(note_runs, note_size)
        if asks_twofact:
            result["twofact"] = twofact_json(twofact_runs, twofact)
        print(json.dumps(result, indent=2))
    else:
        if "conversations" in chosen:
            print(
                f"{size['users']} users, {size['sessions']} sessions, {size['messages']} "
                f"messages; {len(questions)} questions, top {args.limit} results each\n"
            )
            print_tables(rows)
        if note_sets:
            if "conversations" in chosen:
                print()
            asked = [f"{note_size[f'{s}_questions']} {s}" for s in note_sets]
            print(
                f"{note_size['notes']} notes in one agent's archival memory; "
                f"{' and '.join(asked)} questions, top {args.limit} results each\n"
            )
            print_note_tables(note_runs)
        if asks_twofact:
            if "conversations" in chosen or note_sets:
                print()
            print(
                f"{len(notes.notes) + len(twofact.notes)} notes in one agent's archival memory; "
                f"{len(twofact.questions)} two-fact questions, top {args.limit} results each\n"
            )
            print_twofact_tables(twofact_runs)
    if missing:
        print(f"\n{missing}", file=sys.stderr)
        return 1
    return 0


def notes_json(runs: Sequence[NoteRun], size: dict[str, Any]) -> dict[str, Any]:
    def key(run: NoteRun) -> str:
        return f"{run.mode}/{run.backend}"

    def first(answers: Sequence[str], ranked: Sequence[str]) -> int | None:
        return next((i for i, n in enumerate(ranked, 1) if n in answers), None)

    return {
        "data": size,
        "paraphrase": [row.as_json() for run in runs if (row := run.paraphrase_row())],
        "unrelated": [u.as_json() for run in runs if (u := run.unrelated_row())],
        "first_answer_rank": {
            key(run): {q.id: first(q.answers, got.ranked) for q, got in run.paraphrase}
            for run in runs
            if run.paraphrase
        },
        "unrelated_total": {
            key(run): {u.id: got.total for u, got in run.unrelated} for run in runs if run.unrelated
        },
    }


def twofact_json(runs: Sequence[NoteRun], twofact: TwoFacts) -> dict[str, Any]:
    def ranks(answers: Sequence[str], ranked: Sequence[str]) -> list[int | None]:
        return [ranked.index(a) + 1 if a in ranked else None for a in answers]

    return {
        "data": {"notes_added": len(twofact.notes), "questions": len(twofact.questions)},
        "rows": [row.as_json() for run in runs for row in run.twofact_rows()],
        "answer_ranks": {
            f"{run.mode}/{run.backend}": {
                q.id: ranks(q.answers, got.ranked) for q, got in run.twofact
            }
            for run in runs
        },
    }


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
