"""OwnedAgent: loads an agent of the caller's, or 404. A route never loads another tenant's
agent and then checks: the key is built from the caller, so there is nothing to check."""

from typing import Annotated

from fastapi import Depends

from api.agents import service
from api.agents.models import Agent
from api.auth.deps import CurrentUser
from api.deps import TableDep


async def owned_agent(agent_id: str, user: CurrentUser, table: TableDep) -> Agent:
    return await service.get(table, user.email, agent_id)


OwnedAgent = Annotated[Agent, Depends(owned_agent)]
