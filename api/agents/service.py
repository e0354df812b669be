"""Agents: created idempotently by name, configured with an architecture and a provider the
user has, deleted with everything they own."""

import asyncio
import re
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from api.agents import repository, specialists
from api.agents.models import Agent, AgentNameGuard
from api.agents.schemas import AgentCreate, AgentForm, AgentUpdate, ProviderModels
from api.errors import AppError, BadRequest, NotFound
from api.kit import aio
from api.kit.clock import Clock
from api.kit.forms import Option, form_of
from api.kit.secrets import new_id
from api.llm.errors import ProviderError
from api.memory import service as memory
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.settings import service as settings_service
from api.settings.providers import PROVIDERS
from api.store.table import TransactionCancelled, TxOp

T = TypeVar("T")
MODEL_LISTING_SECONDS = 3.0
SAVE_ATTEMPTS = 5


class AgentNotFound(NotFound):
    code = "agent_not_found"


class AgentNameTaken(AppError):
    status_code = 409
    code = "agent_name_taken"


class AgentBusy(AppError):
    status_code = 503
    code = "agent_busy"


class UnknownArchitecture(BadRequest):
    code = "unknown_architecture"


class ProviderNotConfigured(BadRequest):
    code = "provider_not_configured"


def normalize_name(name: str) -> str:
    """Names differing only in case or spacing are the same name."""
    return re.sub(r"\s+", " ", name).strip().casefold()


def _now(clock: Clock) -> datetime:
    return datetime.fromtimestamp(clock.now(), tz=UTC)


async def _check_choices(
    repos: Repositories,
    email: str,
    architecture: str,
    provider: str,
    architectures: Collection[str],
) -> None:
    if architecture not in architectures:
        known = ", ".join(architectures)
        raise UnknownArchitecture(f"There is no architecture {architecture!r}; try: {known}.")
    if provider not in PROVIDERS:
        raise ProviderNotConfigured(f"There is no provider {provider!r}.")
    if PROVIDERS[provider].credentials is not None and (
        await repos.provider_settings.get(email, provider) is None
    ):
        raise ProviderNotConfigured(
            f"Configure {PROVIDERS[provider].label} in your settings before using it."
        )


async def create(
    repos: Repositories,
    email: str,
    body: AgentCreate,
    clock: Clock,
    *,
    architectures: Collection[str],
) -> tuple[Agent, bool]:
    """The agent with this name: created, or the one that exists (and whether it is new).
    `architectures`: the names of those installed (the runtime's), one of which it must have."""
    normalized = normalize_name(body.name)
    existing = await _existing(repos, email, normalized)
    if existing is not None:
        return existing, False
    await _check_choices(repos, email, body.architecture, body.provider, architectures)
    agent = await _with_specialists(repos, _new(email, body, clock), body.specialists)
    guard = AgentNameGuard(created_by=email, normalized_name=normalized, agent_id=agent.agent_id)
    try:
        await repos.agents.create(agent, guard)
    except TransactionCancelled:
        # Someone created it first, between our read and our write: that one is the agent.
        existing = await _existing(repos, email, normalized)
        if existing is None:
            raise
        return existing, False
    await memory.ensure_default_blocks(repos, agent.agent_id, persona=body.persona, clock=clock)
    return agent, True


async def create_linked(
    repos: Repositories,
    email: str,
    body: AgentCreate,
    clock: Clock,
    linked: Callable[[Agent], Sequence[TxOp]],
    *,
    architectures: Collection[str],
) -> Agent:
    """A new agent, never an existing one, written in one transaction with its name guard
    and the `linked` writes (a lookup item that names it: seed 004's subject).
    AgentNameTaken when the name is taken; TransactionCancelled when a linked write's
    condition refused (read by the labels the linked writes carry)."""
    await _check_choices(repos, email, body.architecture, body.provider, architectures)
    agent = await _with_specialists(repos, _new(email, body, clock), body.specialists)
    normalized = normalize_name(body.name)
    guard = AgentNameGuard(created_by=email, normalized_name=normalized, agent_id=agent.agent_id)
    try:
        await repos.agents.create(agent, guard, linked(agent))
    except TransactionCancelled as e:
        if e.refused(repository.NAME_GUARD):
            raise AgentNameTaken(f"You already have an agent named {agent.agent_name!r}.") from e
        raise
    await memory.ensure_default_blocks(repos, agent.agent_id, persona=body.persona, clock=clock)
    return agent


def _new(email: str, body: AgentCreate, clock: Clock) -> Agent:
    now = _now(clock)
    return Agent(
        agent_id=new_id(),
        created_by=email,
        agent_name=body.name.strip(),
        agent_architecture=body.architecture,
        agent_provider=body.provider,
        agent_model=body.model,
        agent_persona=body.persona,
        event_expiry_days=body.event_expiry_days,
        recent_turns=body.recent_turns,
        auto_supersede=body.auto_supersede,
        handoff_to_user=body.handoff_to_user,
        metadata=body.metadata,
        created_at=now,
        updated_at=now,
    )


async def _with_specialists(repos: Repositories, agent: Agent, named: Sequence[str]) -> Agent:
    """The agent with the specialists it names, checked among its owner's agents."""
    if not named:
        return agent
    mine = await repos.agents.list_for(agent.created_by)
    return agent.model_copy(update={"specialists": specialists.check(agent.agent_id, named, mine)})


async def _existing(repos: Repositories, email: str, normalized: str) -> Agent | None:
    guard = await repos.agents.guard_of(email, normalized)
    return await repos.agents.get(email, guard.agent_id) if guard else None


async def list_for(repos: Repositories, email: str) -> list[Agent]:
    """The user's agents, the last used first (an agent never used counts from its
    creation), then by name."""
    found = await repos.agents.list_for(email)
    by_name = sorted(found, key=lambda a: (normalize_name(a.agent_name), a.agent_id))
    return sorted(by_name, key=lambda a: a.last_used_at or a.created_at, reverse=True)


async def get(repos: Repositories, email: str, agent_id: str) -> Agent:
    agent = await repos.agents.get(email, agent_id)
    if agent is None:
        raise AgentNotFound("No agent with that id.")
    return agent


async def get_by_name(repos: Repositories, email: str, name: str) -> Agent:
    """The caller's agent with this name (as names compare: case and spacing aside),
    found through the caller's own name guard: another tenant's agent is never reached."""
    normalized = normalize_name(name)
    agent = await _existing(repos, email, normalized) if normalized else None
    if agent is None:
        raise AgentNotFound(f"You have no agent named {name.strip()[:100]!r}.")
    return agent


async def id_by_name(repos: Repositories, email: str, name: str) -> str:
    """The id of the caller's agent with this name, from its name guard alone (one read),
    for a caller that reads the agent together with what it needs of it."""
    normalized = normalize_name(name)
    guard = await repos.agents.guard_of(email, normalized) if normalized else None
    if guard is None:
        raise AgentNotFound(f"You have no agent named {name.strip()[:100]!r}.")
    return guard.agent_id


async def by_name_with(
    repos: Repositories, email: str, name: str, reads: Callable[[str], Awaitable[T]]
) -> tuple[Agent, T]:
    """The caller's agent with this name and `reads(agent_id)`, read together with it.
    The id last found for the name is tried first, and kept only if the agent read with
    it still bears the name (one hop fewer to the store for a caller that asks for the
    same agent on every model call); otherwise the name's guard is read, then both."""
    normalized = normalize_name(name)
    hint = _NAME_HINTS.get(email, normalized)
    if hint is not None:
        agent, also = await asyncio.gather(repos.agents.get(email, hint), reads(hint))
        if agent is not None and normalize_name(agent.agent_name) == normalized:
            return agent, also
        _NAME_HINTS.forget(email, normalized)
    agent_id = await id_by_name(repos, email, name)
    found, also = await asyncio.gather(repos.agents.get(email, agent_id), reads(agent_id))
    if found is None:  # deleted since its guard was read
        raise AgentNotFound(f"You have no agent named {name.strip()[:100]!r}.")
    _NAME_HINTS.keep(email, normalized, agent_id)
    return found, also


class _NameHints:
    """Agent ids by (owner, normalized name), the most recent MAX_NAME_HINTS: hints only,
    each checked against the agent it names before it is used, so a rename or a deletion,
    on any replica, costs one wasted read and never a wrong answer."""

    def __init__(self) -> None:
        self._ids: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._lock = threading.Lock()  # event loops of other threads share the process

    def get(self, email: str, normalized: str) -> str | None:
        with self._lock:
            return self._ids.get((email, normalized))

    def keep(self, email: str, normalized: str, agent_id: str) -> None:
        with self._lock:
            self._ids[(email, normalized)] = agent_id
            self._ids.move_to_end((email, normalized))
            while len(self._ids) > MAX_NAME_HINTS:
                self._ids.popitem(last=False)

    def forget(self, email: str, normalized: str) -> None:
        with self._lock:
            self._ids.pop((email, normalized), None)


MAX_NAME_HINTS = 10_000
_NAME_HINTS = _NameHints()


async def get_by_id_or_name(repos: Repositories, email: str, id_or_name: str) -> Agent:
    """The caller's agent with this id or, failing that, this name (an id wins). Both are
    looked up at once, in the caller's partition."""
    normalized = normalize_name(id_or_name)
    by_id, guard = await asyncio.gather(
        repos.agents.get(email, id_or_name),
        repos.agents.guard_of(email, normalized) if normalized else aio.ready(None),
    )
    if by_id is not None:
        return by_id
    agent = await repos.agents.get(email, guard.agent_id) if guard else None
    if agent is None:
        raise AgentNotFound("No agent with that id or name.")
    return agent


async def update(
    repos: Repositories,
    agent: Agent,
    body: AgentUpdate,
    clock: Clock,
    *,
    architectures: Collection[str],
) -> Agent:
    """The changes applied to the agent as stored; a concurrent edit is re-read and the
    changes applied again, so neither is lost."""
    changes = body.model_dump(exclude_unset=True)
    if any(v is None for v in changes.values()):
        raise BadRequest("A field can be changed, not emptied.")
    await _check_choices(
        repos,
        agent.created_by,
        changes.get("architecture", agent.agent_architecture),
        changes.get("provider", agent.agent_provider),
        architectures,
    )
    if "specialists" in changes:
        mine = await repos.agents.list_for(agent.created_by)
        changes["specialists"] = specialists.check(agent.agent_id, changes["specialists"], mine)
    persona = changes["persona"].splitlines() if "persona" in changes else None
    if persona is not None:
        # A persona that does not fit the block is refused before anything is saved.
        await memory.check_lines(repos, agent.agent_id, "persona", persona)
    for _ in range(SAVE_ATTEMPTS):
        updated, old_guard, new_guard = _apply(agent, changes, clock)
        try:
            await repos.agents.save(updated, old_guard=old_guard, new_guard=new_guard)
        except TransactionCancelled as e:
            if e.failed(repository.NAME_GUARD):
                raise AgentNameTaken(
                    f"You already have an agent named {updated.agent_name!r}."
                ) from e
            agent = await get(repos, agent.created_by, agent.agent_id)  # saved by someone else
            continue
        if persona is not None:
            # The persona block is what the model sees: a new persona becomes its lines
            # (what the agent wrote there itself is replaced). After the agent is saved,
            # so a refused save (a taken name) leaves the block as it was.
            await memory.write_lines(repos, agent.agent_id, "persona", persona, clock=clock)
        return updated
    raise AgentBusy("The agent is being edited by others; try again.")


# same name on the agent
KEPT_AS_IS = (
    "event_expiry_days",
    "recent_turns",
    "auto_supersede",
    "handoff_to_user",
    "specialists",
    "metadata",
)


def _apply(
    agent: Agent, changes: dict[str, Any], clock: Clock
) -> tuple[Agent, AgentNameGuard | None, AgentNameGuard | None]:
    """The next version of `agent`, and the name guards to move if the name changes."""
    renamed = "name" in changes and normalize_name(changes["name"]) != normalize_name(
        agent.agent_name
    )
    updated = agent.model_copy(
        update={
            **{
                f"agent_{k}": v
                for k, v in changes.items()
                if k in ("name", "architecture", "provider", "model", "persona")
            },
            **{k: v for k, v in changes.items() if k in KEPT_AS_IS},
            "updated_at": _now(clock),
            "version": agent.version + 1,
        }
    )
    if not renamed:
        return updated, None, None
    # The guard to free is the stored name's, read with the agent: never a stale one.
    old_guard = AgentNameGuard(
        created_by=agent.created_by,
        normalized_name=normalize_name(agent.agent_name),
        agent_id=agent.agent_id,
    )
    new_guard = old_guard.model_copy(update={"normalized_name": normalize_name(updated.agent_name)})
    return updated, old_guard, new_guard


async def delete(repos: Repositories, search: SearchEngine, agent: Agent) -> None:
    """The agent, its name, its memory and its conversations. What the agent owns goes
    first, so that a delete cut short can simply be repeated; the agent goes last."""
    await asyncio.gather(
        memory.delete_all(repos, search, agent.agent_id),
        repos.conversations.delete_for_agent(agent.created_by, agent.agent_id),
    )
    for _ in range(SAVE_ATTEMPTS):
        guard = AgentNameGuard(
            created_by=agent.created_by,
            normalized_name=normalize_name(agent.agent_name),
            agent_id=agent.agent_id,
        )
        try:
            await repos.agents.delete(agent, guard)
        except TransactionCancelled:
            agent = await get(repos, agent.created_by, agent.agent_id)  # 404 once it is gone
            continue
        search.forget(agent.agent_id)  # this process's index of it
        await _drop_specialist(repos, agent)
        return
    raise AgentBusy("The agent is being edited by others; try again.")


async def _drop_specialist(repos: Repositories, gone: Agent) -> None:
    """A deleted agent leaves the lists of the agents that named it as a specialist. One
    missed (the process stopping here) is harmless: a turn offers only the specialists it
    finds, and a save of that list checks it again."""
    naming = [
        a for a in await repos.agents.list_for(gone.created_by) if gone.agent_id in a.specialists
    ]
    for agent in naming:
        for _ in range(SAVE_ATTEMPTS):
            kept = [s for s in agent.specialists if s != gone.agent_id]
            try:
                await repos.agents.save(
                    agent.model_copy(update={"specialists": kept, "version": agent.version + 1})
                )
                break
            except TransactionCancelled:
                found = await repos.agents.get(agent.created_by, agent.agent_id)
                if found is None or gone.agent_id not in found.specialists:
                    break
                agent = found


async def form(
    repos: Repositories,
    email: str,
    *,
    providers: settings_service.ProviderFactory,
    architectures: Collection[str],
    with_models: bool = True,
) -> AgentForm:
    """The agents form: architectures, the providers this user can use, their agents (to
    pick specialists among), and (unless
    `with_models` is false, for a page that lists each provider's on its own) their models."""
    stored, mine = await asyncio.gather(
        repos.provider_settings.list_for(email), list_for(repos, email)
    )
    configured = ["offline"] + [s.provider_name for s in stored]
    fields = form_of(
        AgentCreate,
        options={
            "architecture": [Option(value=name, label=name) for name in architectures],
            "provider": [Option(value=p, label=PROVIDERS[p].label) for p in configured],
            # Its specialists are picked among the user's agents (an agent's own form
            # offers it too: the save refuses it, as it refuses a loop).
            "specialists": [Option(value=a.agent_id, label=a.agent_name) for a in mine],
        },
    ).fields
    if not with_models:
        return AgentForm(fields=fields, models={}, notes={})
    listed = await asyncio.gather(
        *(_models_or_note(repos, email, p, providers) for p in configured)
    )
    models = {m.provider: m.models for m in listed if m.note is None}
    notes = {m.provider: m.note for m in listed if m.note is not None}
    return AgentForm(fields=fields, models=models, notes=notes)


async def _models_or_note(
    repos: Repositories, email: str, provider: str, providers: settings_service.ProviderFactory
) -> ProviderModels:
    try:
        return await models_of(repos, email, provider, providers)
    except AppError as e:  # its settings cannot be used (say, a private address refused)
        return ProviderModels(provider=provider, note=e.message)


async def models_of(
    repos: Repositories, email: str, provider: str, providers: settings_service.ProviderFactory
) -> ProviderModels:
    """The models a provider of this user lists, or a note of why it did not (within
    MODEL_LISTING_SECONDS: a form waits for no provider longer). The settings' errors when
    the provider is unknown, not configured, or its settings cannot be used."""
    llm = await providers.for_user(repos, email, provider)
    try:
        listed = await asyncio.wait_for(llm.list_models(), MODEL_LISTING_SECONDS)
    except TimeoutError:
        return ProviderModels(provider=provider, note="The provider did not answer in time.")
    except ProviderError as e:
        return ProviderModels(provider=provider, note=e.message)
    return ProviderModels(provider=provider, models=listed)
