"""Subjects: found through the caller's lookup item, made with their agent in one
transaction, deleted with everything of theirs."""

from api.agents import service as agents
from api.agents.models import DEFAULT_ARCHITECTURE, Agent
from api.agents.schemas import AgentCreate
from api.agents.service import AgentNameTaken
from api.errors import NotFound
from api.kit.clock import Clock
from api.memory import service as memory
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.table import ItemAbsent, Put, TransactionCancelled, TxOp
from api.subjects import repository
from api.subjects.models import Subject

AGENT_NAME = "Memory: {}"  # the subject's agent, as /agents and the web app list it
NAME_ATTEMPTS = 5  # a name the caller gave another agent of theirs gets a number


class SubjectNotFound(NotFound):
    code = "subject_not_found"

    def __init__(self, user_id: str) -> None:
        super().__init__(
            f"No memory for user {user_id!r}: initialize it first (POST /memory/initialize).",
            user_id=user_id,
        )


async def get(repos: Repositories, email: str, user_id: str) -> Subject:
    """The caller's subject, by its lookup item alone (one read)."""
    subject = await repos.subjects.get(email, user_id)
    if subject is None:
        raise SubjectNotFound(user_id)
    return subject


async def find(repos: Repositories, email: str, user_id: str) -> tuple[Subject, Agent] | None:
    subject = await repos.subjects.get(email, user_id)
    if subject is None:
        return None
    agent = await repos.agents.get(email, subject.agent_id)
    return (subject, agent) if agent is not None else None


async def get_with_agent(repos: Repositories, email: str, user_id: str) -> tuple[Subject, Agent]:
    found = await find(repos, email, user_id)
    if found is None:
        raise SubjectNotFound(user_id)
    return found


async def open_subject(
    repos: Repositories, email: str, user_id: str, clock: Clock, *, provider: str, model: str
) -> tuple[Subject, Agent, bool]:
    """The caller's subject: the one that exists, or a new one with its agent (and whether
    it is new). Concurrent calls make one."""
    stale = await repos.subjects.get(email, user_id)
    if stale is not None:
        agent = await repos.agents.get(email, stale.agent_id)
        if agent is not None:
            return stale, agent, False
        await repos.subjects.delete(stale)  # its agent was deleted through /agents
    for attempt in range(NAME_ATTEMPTS):
        name = AGENT_NAME.format(user_id) + (f" ({attempt + 1})" if attempt else "")
        body = AgentCreate(
            name=name, provider=provider, model=model, metadata={"memory_subject": user_id}
        )
        made: list[Subject] = []

        def linked(agent: Agent, made: list[Subject] = made) -> list[TxOp]:
            subject = Subject(
                created_by=email,
                user_id=user_id,
                agent_id=agent.agent_id,
                created_at=agent.created_at,
            )
            made.append(subject)
            return [Put(subject.to_dynamo_item(), condition=ItemAbsent(), label=repository.SUBJECT)]

        try:
            # A subject's agent has the default architecture, always installed.
            agent = await agents.create_linked(
                repos, email, body, clock, linked, architectures=(DEFAULT_ARCHITECTURE,)
            )
        except AgentNameTaken:
            continue
        except TransactionCancelled as e:
            if not e.refused(repository.SUBJECT):
                raise
            found = await find(repos, email, user_id)  # made meanwhile by another call
            if found is None:
                raise
            return (*found, False)
        return made[-1], agent, True
    raise AgentNameTaken(f"Your agents already use the names for {user_id!r}; rename one.")


async def delete(repos: Repositories, search: SearchEngine, subject: Subject) -> None:
    """The subject and everything of theirs: the lookup first (from then on no message can
    be added to it), the markers of its runs not ended, then the agent with its blocks,
    memories, runs, conversations and messages."""
    agent = await repos.agents.get(subject.created_by, subject.agent_id)
    if not await repos.subjects.delete(subject):
        raise SubjectNotFound(subject.user_id)  # deleted or reset meanwhile
    unfinished = await repos.memory_runs.all_unfinished(subject.agent_id)
    await repos.memory_runs.forget_all([q.run_id for q in unfinished])
    if agent is not None:
        await agents.delete(repos, search, agent)
    else:
        await memory.delete_all(repos, search, subject.agent_id)
