"""The OpenAI-compatible use cases, over the services every other surface uses: the agent
found among the caller's (by id or name), then a /chat turn (`chat.service.open_turn`)
in the session the request names. Nothing here runs a turn: the runtime does."""

from api.agents import service as agents
from api.agents.models import Agent
from api.agents.service import AgentNotFound
from api.chat import service as chat
from api.http.openai import translate
from api.http.openai.errors import ModelNotFound, TurnFailed
from api.http.openai.schemas import ChatCompletion, ChatCompletionIn, ModelList, ModelOut
from api.kit.clock import Clock
from api.repositories import Repositories
from api.runtime.runner import PreparedTurn, Runtime


async def agent_named(repos: Repositories, email: str, model: str) -> Agent:
    try:
        return await agents.get_by_id_or_name(repos, email, model)
    except AgentNotFound:
        raise ModelNotFound(
            f"The model {model[:100]!r} does not exist: name one of your agents (by name or "
            "id); GET /v1/models lists them."
        ) from None


async def open_turn(
    repos: Repositories,
    clock: Clock,
    runtime: Runtime,
    email: str,
    body: ChatCompletionIn,
    *,
    session_header: str | None,
    wait_header: str | None,
) -> PreparedTurn:
    """The turn, prepared (its conversation's lease taken): what the request asks is
    checked first, then the agent is found, then the session's conversation."""
    turn = translate.turn_of(body, session_header, wait_header)
    agent = await agent_named(repos, email, body.model)
    ask = turn.model_copy(update={"agent_id": agent.agent_id})
    return await chat.open_turn(repos, clock, runtime, email, ask, agent=agent)


async def answer(prepared: PreparedTurn, completion: translate.Completion) -> ChatCompletion:
    """The turn run to its end, as one `chat.completion`."""
    found = await prepared.collect()
    if prepared.failure is not None:
        raise TurnFailed(prepared.failure)
    return completion.answer(found)


async def models(repos: Repositories, email: str) -> ModelList:
    """The caller's agents, oldest first."""
    found = sorted(await agents.list_for(repos, email), key=lambda a: a.created_at)
    return ModelList(
        data=[
            ModelOut(
                id=agent.agent_name,
                created=int(agent.created_at.timestamp()),
                owned_by=agent.created_by,
                agent_id=agent.agent_id,
                provider=agent.agent_provider,
                provider_model=agent.agent_model,
            )
            for agent in found
        ]
    )
