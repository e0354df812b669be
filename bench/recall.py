"""How well memory search finds the messages that answer a person's question.

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

    uv run python bench/recall.py [--backends static,none] [--modes lexical,hybrid]
                                  [--kinds single,temporal] [--limit 10] [--json] [--dry-run]

`--dry-run` validates the data and measures the baseline only. Exits 2 when the data is
invalid, and 1, after printing the baseline, when the search engine cannot be imported.
"""

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict

from api.kit.clock import FrozenClock
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Table
from bench.report import Report

if TYPE_CHECKING:
    from api.search.engine import SearchEngine

DATA = Path(__file__).parent / "recall_data"
Kind = Literal["single", "multi", "temporal", "paraphrase", "update"]
SearchMode = Literal["lexical", "semantic", "hybrid"]
KINDS: tuple[Kind, ...] = ("single", "multi", "temporal", "paraphrase", "update")
MODES: tuple[SearchMode, ...] = ("lexical", "semantic", "hybrid")
BASELINE = "baseline-overlap"
KS = (1, 5, 10)
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


# --- metrics -------------------------------------------------------------------------


@dataclass(frozen=True)
class Scored:
    """One question answered by one ranker."""

    question: Question
    recall: tuple[float, ...]  # at each of KS
    hit: tuple[bool, ...]
    first: int | None  # the 1-based rank of the first answer found
    seconds: float

    @property
    def reciprocal_rank(self) -> float:
        return 1 / self.first if self.first else 0.0


def score(question: Question, ranked: Sequence[str], seconds: float = 0.0) -> Scored:
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


# --- the engine: all coupling to it lives in `load` and `rank` ----------------------


@dataclass(frozen=True)
class Indexed:
    """Every user's messages in a fresh agent of one engine."""

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
    from api.embeddings.factory import get_embedding_backend
    from api.messages import service as messages
    from api.messages.models import Message
    from api.search.engine import SearchEngine

    engine = SearchEngine(table, get_embedding_backend(backend), clock)
    try:
        agents: dict[str, str] = {}
        for user in users:
            owner = owner_of(user.id)
            name = f"recall-{user.id}-{uuid.uuid4().hex[:8]}"
            agent, _ = await agent_service.create(table, owner, AgentCreate(name=name), clock)
            agents[user.id] = agent.agent_id
            for session in user.sessions:
                clock.set(session.messages[0].created_at.timestamp())
                conversation = await conversations.create(table, agent, session.id, clock)
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
                    await messages.record(engine, owner, agent.agent_id, message)
        yield Indexed(engine, agents, clock, semantic=engine.embedder is not None)
    finally:
        await engine.aclose()


async def rank(indexed: Indexed, mode: SearchMode, question: Question, limit: int) -> list[str]:
    """The ids of the messages the engine finds for the question, best first, asked at the
    question's time."""
    from api.messages import service as messages

    indexed.clock.set(question.asked_at.timestamp())
    found = await messages.search(
        indexed.engine,
        owner_of(question.user),
        indexed.agents[question.user],
        question.question,
        mode=mode,
        limit=limit,
    )
    return [hit.message_id for hit in found.hits]


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
        for mode in modes:
            if mode == "semantic" and not indexed.semantic:
                continue  # no vectors to search
            scored = []
            for q in questions:
                start = time.perf_counter()
                ranked = await rank(indexed, mode, q, limit)
                scored.append(score(q, ranked[:limit], time.perf_counter() - start))
            runs.append(Run(mode, backend, scored))
    return runs


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


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backends", type=names, default=["static"], help="e.g. static,none")
    parser.add_argument("--modes", type=lambda s: names(s, MODES), default=list(MODES))
    parser.add_argument("--kinds", type=lambda s: names(s, KINDS), default=list(KINDS))
    parser.add_argument("--limit", type=positive, default=10, help="results asked per question")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--dry-run", action="store_true", help="validate, then the baseline only")
    return parser.parse_args()


async def main() -> int:
    args = arguments()
    modes = [m for m in MODES if m in args.modes]
    users, all_questions = validated()
    questions = [q for q in all_questions if q.kind in args.kinds]

    runs = [run_baseline(users, questions, args.limit)]
    missing = None
    if not args.dry_run:
        try:
            for backend in args.backends:
                runs += await run_backend(backend, modes, users, questions, args.limit)
        except ModuleNotFoundError as e:
            if not (e.name or "").startswith("api."):
                raise
            missing = f"the search engine cannot be imported, so it was not measured: {e}"

    rows = [row for run in runs for row in run.rows()]
    size = describe(users, all_questions)
    if args.json:
        ranks = {f"{r.mode}/{r.backend}": {s.question.id: s.first for s in r.scored} for r in runs}
        result = {
            "data": size,
            "limit": args.limit,
            "rows": [row.as_json() for row in rows],
            "first_answer_rank": ranks,
        }
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{size['users']} users, {size['sessions']} sessions, {size['messages']} messages; "
            f"{len(questions)} questions, top {args.limit} results each\n"
        )
        print_tables(rows)
    if missing:
        print(f"\n{missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
