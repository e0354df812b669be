"""Who calls an MCP tool, and with what: the user `auth` found for the HTTP request that
carries the call, and the app's services from the lifespan's state. Every tool acts as
that user, inside their tenant: agents and subjects are looked up in their partition only,
so another tenant's id is "not found", as over REST."""

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from api.agents import service as agents
from api.agents.models import Agent
from api.config import Settings
from api.errors import AppError, public_body
from api.http.mcp import auth
from api.memory_layer.schemas import MAX_USER_ID_CHARS
from api.memory_runs.service import MemoryRunner
from api.repositories import Repositories
from api.runtime.turn import MessageClock
from api.search.engine import SearchEngine
from api.users.models import User

T = TypeVar("T")
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

AgentRef = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="The agent whose memory to use: its id or its name (list_agents shows yours).",
    ),
]
UserId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_USER_ID_CHARS,
        description="The seed 004 subject (your user_id for a person or customer) whose "
        "memory to use.",
    ),
]


@dataclass(frozen=True)
class Caller:
    """The authenticated user and the app's services (the lifespan's state)."""

    user: User
    settings: Settings
    repos: Repositories
    search: SearchEngine
    message_clock: MessageClock
    memory_runs: MemoryRunner

    async def agent(self, agent: str) -> Agent:
        return await agents.get_by_id_or_name(self.repos, self.user.email, agent.strip())


def caller(ctx: Context[Any, Any]) -> Caller:
    request = ctx.request_context.request
    if request is None:  # only an HTTP request reaches these tools
        raise ToolError("This tool is served over HTTP only.")
    state = request.state
    return Caller(
        user=auth.caller(request.scope),
        settings=state.settings,
        repos=state.repos,
        search=state.search,
        message_clock=state.message_clock,
        memory_runs=state.memory_runs,
    )


async def answer(work: Awaitable[T]) -> T:
    """A refusal of ours (an agent not found, a bad value) as a tool error the model reads:
    its code and message, as a REST client would see them."""
    try:
        return await work
    except AppError as e:
        body = public_body(e)
        raise ToolError(f"{body['code']}: {body['message']}") from None
