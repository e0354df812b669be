"""/agents: a user's agents, and the form to create them."""

import dataclasses
from typing import Annotated

from fastapi import Query, Response, status

from api.agents import service, specialists
from api.agents.schemas import AgentCreate, AgentForm, AgentOut, AgentUpdate, ProviderModels
from api.agents.service import (
    AgentBusy,
    AgentNameTaken,
    AgentNotFound,
    ProviderNotConfigured,
    UnknownArchitecture,
)
from api.chat.schemas import MAX_SESSION_ID_BYTES
from api.conversations.messages.schemas import ID_PATTERN, MAX_PROMPT_CHARS
from api.errors import BadRequest
from api.http.contract.errors import errors
from api.http.deps.agents import AgentByIdOrName, OwnedAgent
from api.http.deps.app import ClockDep, ProvidersDep, ReposDep, SearchDep
from api.http.deps.auth import CurrentUser
from api.http.deps.runtime import RuntimeDep
from api.http.route_filter import Router
from api.runtime import context
from api.runtime.context import SessionNotFound
from api.runtime.runner import ArchitectureUnavailable
from api.runtime.schemas import TurnContextItemOut, TurnContextOut, TurnContextPartOut
from api.settings.service import PROVIDER_SETUP

router = Router(prefix="/agents", tags=["agents"])


@router.get("/schema", operation_id="agents_form")
async def agent_form(
    user: CurrentUser,
    repos: ReposDep,
    runtime: RuntimeDep,
    providers: ProvidersDep,
    models: bool = Query(
        default=True,
        description="List each provider's models (false: the form at once, with none; "
        "GET /agents/schema/models/{provider} lists one provider's)",
    ),
) -> AgentForm:
    """The form, driven by the backend: architectures, your providers and their models."""
    return await service.form(
        repos,
        user.email,
        providers=providers,
        architectures=runtime.architectures,
        with_models=models,
    )


@router.get(
    "/schema/models/{provider}",
    operation_id="agents_form_models",
    responses=errors(*PROVIDER_SETUP),
)
async def provider_models(
    provider: str, user: CurrentUser, repos: ReposDep, providers: ProvidersDep
) -> ProviderModels:
    """One provider's models for the form's model field, within a few seconds: a provider
    that fails or does not answer in time gives none, with a note of why."""
    return await service.models_of(repos, user.email, provider, providers)


@router.post(
    "",
    operation_id="agents_create",
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"model": AgentOut, "description": "You already have an agent by that name."},
        **errors(
            UnknownArchitecture,
            ProviderNotConfigured,
            AgentNameTaken,
            AgentBusy,
            *specialists.REFUSALS,
        ),
    },
)
async def create_agent(
    body: AgentCreate,
    user: CurrentUser,
    response: Response,
    repos: ReposDep,
    clock: ClockDep,
    runtime: RuntimeDep,
) -> AgentOut:
    """Idempotent by name: creating a name you already have returns that agent (200)."""
    agent, created = await service.create(
        repos, user.email, body, clock, architectures=runtime.architectures
    )
    if not created:
        response.status_code = status.HTTP_200_OK
    return AgentOut.of(agent)


@router.get("", operation_id="agents_list")
async def list_agents(user: CurrentUser, repos: ReposDep) -> list[AgentOut]:
    return [AgentOut.of(a) for a in await service.list_for(repos, user.email)]


@router.get("/{agent_id}", operation_id="agents_get", responses=errors(AgentNotFound))
async def get_agent(agent: AgentByIdOrName) -> AgentOut:
    """By id or, failing that, by name (seed 002's `GET /agents/{name}`)."""
    return AgentOut.of(agent)


@router.get(
    "/{agent_id}/context",
    operation_id="agents_context",
    responses=errors(AgentNotFound, SessionNotFound, ArchitectureUnavailable, *PROVIDER_SETUP[1:]),
)
async def agent_context(
    agent: OwnedAgent,
    runtime: RuntimeDep,
    session_id: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_SESSION_ID_BYTES,
            pattern=ID_PATTERN,
            description="The conversation (a session id, or a conversation's id): its "
            "recent turns are shown; none outside any conversation",
        ),
    ] = None,
    prompt: Annotated[
        str,
        Query(
            max_length=MAX_PROMPT_CHARS,
            description="The message about to be sent: it is part of the context, and the "
            "hooks that recall by it do so as in the turn",
        ),
    ] = "",
    actor_id: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=256,
            pattern=ID_PATTERN,
            description="Who would speak (recent turns are theirs); you by default",
        ),
    ] = None,
) -> TurnContextOut:
    """What the agent's next turn would send the model first, by part, with token counts
    against the model's window: built as the turn builds it, with no model call and no
    write. The same errors as a turn for an agent that cannot run (its architecture gone,
    its provider not set up)."""
    found = await context.of_agent(
        runtime, agent, session_id=session_id, actor_id=actor_id, prompt=prompt
    )
    return TurnContextOut(
        agent_id=agent.agent_id,
        session_id=session_id,
        provider=found.provider,
        model=found.model,
        architecture=found.architecture,
        prompt_known=found.known,
        parts=[
            TurnContextPartOut(
                name=p.name,
                tokens=p.tokens,
                count=len(p.items),
                text=p.text,
                items=[TurnContextItemOut(**dataclasses.asdict(i)) for i in p.items],
            )
            for p in found.parts
        ],
        total_tokens=found.total_tokens,
        estimated=True,
        context_window=found.context_window,
        percent_used=found.percent_used,
    )


@router.patch(
    "/{agent_id}",
    operation_id="agents_update",
    responses=errors(
        BadRequest,
        ProviderNotConfigured,
        AgentNotFound,
        AgentNameTaken,
        AgentBusy,
        *specialists.REFUSALS,
    ),
)
async def update_agent(
    agent: OwnedAgent, body: AgentUpdate, repos: ReposDep, clock: ClockDep, runtime: RuntimeDep
) -> AgentOut:
    return AgentOut.of(
        await service.update(repos, agent, body, clock, architectures=runtime.architectures)
    )


@router.delete(
    "/{agent_id}",
    operation_id="agents_delete",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=errors(AgentNotFound, AgentBusy),
)
async def delete_agent(agent: OwnedAgent, repos: ReposDep, search: SearchDep) -> None:
    """Deletes the agent with its memory and its conversations."""
    await service.delete(repos, search, agent)
