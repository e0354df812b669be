"""OwnedAgent: loads an agent of the caller's, or 404. A route never loads another tenant's
agent and then checks: the key is built from the caller, so there is nothing to check."""

from typing import Annotated

from fastapi import Depends

from api.agents import service
from api.agents.models import Agent
from api.http.deps.app import ReposDep
from api.http.deps.auth import CurrentUser


async def owned_agent(agent_id: str, user: CurrentUser, repos: ReposDep) -> Agent:
    return await service.get(repos, user.email, agent_id)


OwnedAgent = Annotated[Agent, Depends(owned_agent)]


async def owned_agent_by_id_or_name(agent_id: str, user: CurrentUser, repos: ReposDep) -> Agent:
    return await service.get_by_id_or_name(repos, user.email, agent_id)


async def named_agent(agent_name: str, user: CurrentUser, repos: ReposDep) -> Agent:
    return await service.get_by_name(repos, user.email, agent_name)


# GET /agents/{agent_id} also takes a name (seed 002's GET /agents/{name}).
AgentByIdOrName = Annotated[Agent, Depends(owned_agent_by_id_or_name)]
# Seed 002's routes name an agent by its name, resolved among the caller's agents.
NamedAgent = Annotated[Agent, Depends(named_agent)]
