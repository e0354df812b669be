"""Seed 004's use cases, each a composition of the services every other surface uses: a
subject is an agent of the caller's (api/subjects/), its blocks are core-memory blocks, an
add stores messages in the subject's session and in archival memory and queues a memory
run (api/memory_runs/), all in one transaction; context and search read the same blocks
and the one search engine."""

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from api.agents.models import Agent
from api.conversations import repository as conversations_repository
from api.conversations import service as conversations
from api.conversations.messages import service as messages
from api.conversations.messages.models import Message, Role
from api.errors import BadRequest
from api.kit.clock import Clock
from api.kit.retry import backoff
from api.kit.secrets import new_id
from api.memory import archival
from api.memory import service as memory
from api.memory.archival import ArchivalInsert, Match, PlannedInserts, SearchPage
from api.memory.errors import BlockExists
from api.memory.models import DEFAULT_WORD_LIMIT
from api.memory.service import BlockView
from api.memory_layer import render
from api.memory_layer.render import HUMAN, HUMAN_DESCRIPTION, SUMMARY, SUMMARY_DESCRIPTION
from api.memory_layer.schemas import MAX_SUPERSEDES, AddConversationRequest, BlockIn
from api.memory_runs import service as memory_runs
from api.memory_runs.models import MemoryRun
from api.memory_runs.service import MemoryRunner
from api.repositories import Repositories
from api.search.engine import SearchBusy, SearchEngine
from api.store.table import TransactionCancelled
from api.subjects import repository as subjects_repository
from api.subjects import service as subjects
from api.subjects.models import Subject

ADD_ATTEMPTS = 5  # a session deleted, or a text stored, meanwhile: planned again


class ModelRequired(BadRequest):
    code = "model_required"


class ArchivalRequired(BadRequest):
    """`supersedes` or `valid_from` on an add that keeps no archival memory."""

    code = "archival_required"


class InvalidSupersedes(BadRequest):
    """More memories replaced than one add's transaction holds, or one named twice."""

    code = "invalid_supersedes"


@dataclass(frozen=True)
class _Offset:
    """A clock a few microseconds on: blocks given together keep their order by time."""

    clock: Clock
    micros: int

    def now(self) -> float:
        return self.clock.now() + self.micros / 1_000_000


# --- initialize ------------------------------------------------------------------------------


async def initialize(
    repos: Repositories,
    search: SearchEngine,
    clock: Clock,
    email: str,
    user_id: str,
    *,
    blocks: Sequence[BlockIn] = (),
    user_info: str | None = None,
    reset: bool = False,
    provider: str | None = None,
    model: str | None = None,
) -> tuple[Agent, int]:
    """The subject with `human`, `summary` and these blocks: made (or, with `reset`,
    deleted and made again), or left as it is when it exists (blocks it lacks are added,
    none is changed). The agent and how many blocks the subject has."""
    if provider is not None and model is None:
        raise ModelRequired("Give the `model` of the memory runs' provider too.")
    if reset:
        found = await repos.subjects.get(email, user_id)
        if found is not None:
            await subjects.delete(repos, search, found)
    _, agent, created = await subjects.open_subject(
        repos,
        email,
        user_id,
        clock,
        provider=provider or "offline",
        model=model or "offline-demo",
    )
    given = {memory.block_name(b.label): b for b in blocks}
    human = given.pop(HUMAN, None)
    summary = given.pop(SUMMARY, None)
    if created:
        await memory.update_block(
            repos,
            agent.agent_id,
            HUMAN,
            description=human.description if human and human.description else HUMAN_DESCRIPTION,
            lines=(human.value if human else user_info or "").splitlines(),
            clock=clock,
        )
    existing = {b.name for b in await memory.list_blocks(repos, agent.agent_id)}
    wanted = [
        (SUMMARY, summary or BlockIn(label=SUMMARY, description=SUMMARY_DESCRIPTION), True),
        *((name, block, False) for name, block in given.items()),
    ]
    for i, (name, block, is_default) in enumerate(wanted):
        if name in existing:
            continue
        with contextlib.suppress(BlockExists):  # made meanwhile by a concurrent call
            await memory.create_block(
                repos,
                agent.agent_id,
                name,
                description=block.description,
                word_limit=DEFAULT_WORD_LIMIT,
                content=block.value,
                char_limit=block.char_limit,
                is_default=is_default,
                clock=_Offset(clock, i),
            )
    views = await memory.list_blocks(repos, agent.agent_id)
    return agent, sum(1 for v in views if v.name != render.PERSONA)


# --- add -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Added:
    """An add's run, as queued, and its archival memories that replaced others."""

    run: MemoryRun
    replacing: list[ArchivalInsert] = field(default_factory=list)


async def add(
    repos: Repositories,
    runner: MemoryRunner,
    stamp: Callable[[], datetime],
    email: str,
    body: AddConversationRequest,
) -> Added:
    """The messages stored in the subject's session and (with `store_in_archival`) in its
    archival memory, embedded and searchable, and their memory run queued: all in one
    transaction, before this returns; then the run is sent to a worker. A message's
    `supersedes` ends those memories (the subject's only: another id is not found) in the
    same transaction; one another write replaced first is left as it is, and said."""
    _check_archival_fields(body)
    search = runner.search
    subject, agent = await subjects.get_with_agent(repos, email, body.user_id)
    said = [(m.role, m.content) for m in body.messages]
    texts = list(dict.fromkeys(content for _, content in said))
    vectors = dict(zip(texts, await search.vectors(texts), strict=True))
    session_id = conversations.default_session_id(email, agent.agent_id)
    replaces: dict[str, list[str]] = {}  # by text: the memories it replaces, when it became true
    since: dict[str, datetime] = {}
    for m in body.messages:
        replaces.setdefault(m.content, []).extend(m.supersedes)
        if m.valid_from is not None:
            since.setdefault(m.content, m.valid_from)
    for attempt in range(ADD_ATTEMPTS):
        found = await conversations.find_session(repos, email, agent.agent_id, session_id)
        conversation_id = await conversations.open_session(
            repos, agent, session_id, runner.clock, found=found
        )
        stored = [
            _message(agent, email, conversation_id, role, text, stamp()) for role, text in said
        ]
        recorded, copies = messages.recorded_ops(search, email, agent.agent_id, stored, vectors)
        planned = (
            await archival.plan_inserts(
                repos,
                search,
                agent.agent_id,
                [(text, [role]) for role, text in said],
                vectors,
                supersedes=replaces,
                valid_from=since,
            )
            if body.store_in_archival
            else PlannedInserts([], [], [])
        )
        run, queued = memory_runs.new_run(agent, subject.user_id, stored, runner.clock.now())
        ops = [subjects_repository.still_names(subject), *recorded, *planned.ops, *queued]
        try:
            await search.commit(agent.agent_id, ops, upserts=[*copies, *planned.items])
        except TransactionCancelled as e:
            if e.refused(subjects_repository.SUBJECT):
                raise subjects.SubjectNotFound(subject.user_id) from None
            session_closing = e.refused(conversations_repository.OPEN)
            if not (session_closing or planned.refused(e)):
                await backoff(attempt)  # a conflicting transaction: again
            continue
        await runner.enqueue(run)
        return Added(run, planned.replacing)
    raise SearchBusy("The subject's memory is being written by too many at once; try again.")


def _check_archival_fields(body: AddConversationRequest) -> None:
    """The rules across messages that a schema cannot state."""
    named = [i for m in body.messages for i in dict.fromkeys(m.supersedes)]
    dated = any(m.valid_from is not None for m in body.messages)
    if (named or dated) and not body.store_in_archival:
        raise ArchivalRequired(
            "`supersedes` and `valid_from` are about the messages' archival memories: send "
            "them with store_in_archival true (nothing was stored)."
        )
    if len(named) > MAX_SUPERSEDES:
        raise InvalidSupersedes(
            f"One add replaces at most {MAX_SUPERSEDES} memories, not {len(named)}; send "
            "the messages in several adds (nothing was stored)."
        )
    if len(set(named)) < len(named):
        twice = next(i for i in named if named.count(i) > 1)
        raise InvalidSupersedes(
            f"Archival memory {twice} is named by two messages: a memory is replaced by one "
            "only (nothing was stored)."
        )


def _message(
    agent: Agent, email: str, conversation_id: str, role: Role, text: str, at: datetime
) -> Message:
    return Message(
        conversation_id=conversation_id,
        message_id=new_id(),
        role=role,
        content=text,
        actor_id=email,
        created_at=at,
        ttl=messages.expires_at(at, agent.event_expiry_days),
    )


# --- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    blocks: list[BlockView]  # as the context shows them (summary last, if included)
    human: BlockView | None
    summary: BlockView | None
    matches: list[Match]
    combined: render.Combined
    pending_runs: int


async def context(
    repos: Repositories,
    runner: MemoryRunner,
    email: str,
    user_id: str,
    *,
    query: str | None,
    max_results: int,
    include_summary: bool,
    token_budget: int | None,
    as_of: datetime | None = None,
) -> Context:
    """The subject's blocks and (for a query) its archival memories most relevant to it,
    read in one round after the subject's lookup, with how many runs are still pending.
    The memories true now (or, for a question about the past, then); with `as_of`, those
    true at that moment. The blocks are as they are now."""
    search = runner.search
    subject = await subjects.get(repos, email, user_id)
    agent_id = subject.agent_id
    wanted = bool(query and query.strip()) and max_results > 0
    views, found, pending = await asyncio.gather(
        memory.list_blocks(repos, agent_id),
        archival.search(search, agent_id, query or "", page_size=max_results, as_of=as_of)
        if wanted
        else _nothing(),
        memory_runs.pending_count(repos, agent_id),
    )
    shown = render.context_blocks(views, include_summary=include_summary)
    matches = found.matches if found else []
    combined = render.combine(
        [render.xml(b) for b in shown], [render.memory_text(m) for m in matches], token_budget
    )
    by_name = {v.name: v for v in views}
    return Context(
        blocks=shown,
        human=by_name.get(HUMAN),
        summary=by_name.get(SUMMARY) if include_summary else None,
        matches=matches[: len(combined.memories)],
        combined=combined,
        pending_runs=pending,
    )


async def _nothing() -> SearchPage | None:
    return None


async def block(repos: Repositories, email: str, user_id: str, name: str) -> BlockView:
    subject = await subjects.get(repos, email, user_id)
    return await memory.read_block(repos, subject.agent_id, name)


async def search(
    repos: Repositories,
    search: SearchEngine,
    email: str,
    user_id: str,
    query: str,
    *,
    max_results: int,
    tags: frozenset[str] | None,
    min_similarity: float | None = None,
    as_of: datetime | None = None,
    include_history: bool = False,
) -> SearchPage:
    """The subject's archival memories best matching the query (with these tags, any of
    them), best first: every write that returned before is found. `min_similarity`: the
    least cosine a semantic match needs (None: the model's floor). Those true now, unless
    the question is about the past or `include_history`; with `as_of`, those true then."""
    subject = await subjects.get(repos, email, user_id)
    return await archival.search(
        search,
        subject.agent_id,
        query,
        page_size=max_results,
        tags=tags,
        min_similarity=min_similarity,
        as_of=as_of,
        include_history=include_history,
    )


async def delete(repos: Repositories, search: SearchEngine, email: str, user_id: str) -> None:
    await subjects.delete(repos, search, await subjects.get(repos, email, user_id))


async def subject_agent(repos: Repositories, email: str, user_id: str) -> Subject:
    return await subjects.get(repos, email, user_id)
