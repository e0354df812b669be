"""GET /agents/{id}/export and POST /agents/import: thin routes over the transfer service."""

from typing import Annotated

from fastapi import Query, Request, Response, status
from fastapi.responses import StreamingResponse

from api.agents.service import AgentNotFound
from api.http.contract.errors import errors
from api.http.deps.agents import OwnedAgent
from api.http.deps.app import ClockDep, ReposDep, SearchDep, SettingsDep
from api.http.deps.auth import CurrentUser
from api.http.route_filter import Router
from api.transfer import service
from api.transfer.format import MEDIA_TYPE
from api.transfer.schemas import ImportedAgent, ImportOut

router = Router(prefix="/agents", tags=["export and import"])
IMPORT_PATH = "/agents/import"  # its body has a limit of its own (RequestLimits' `larger`)


@router.get(
    "/{agent_id}/export",
    operation_id="transfer_export_agent",
    response_class=StreamingResponse,
    responses={
        200: {"content": {MEDIA_TYPE: {}}, "description": "The export file, streamed"},
        **errors(AgentNotFound),
    },
)
async def export_agent(
    agent: OwnedAgent,
    repos: ReposDep,
    clock: ClockDep,
    vectors: Annotated[bool, Query(description="Include each memory's vector")] = True,
) -> StreamingResponse:
    """The agent with all its memory as JSON Lines (docs/export-import.md), streamed as it
    is read. A file cut short by a failure has no trailer, and its import is refused."""
    lines = service.export_agent(repos, agent, clock, with_vectors=vectors)
    return StreamingResponse(
        lines,
        media_type=MEDIA_TYPE,
        headers={"Content-Disposition": f'attachment; filename="agent-{agent.agent_id}.jsonl"'},
    )


@router.post(
    "/import",
    operation_id="transfer_import_agent",
    responses={201: {"description": "A new agent"}, 200: {"description": "Imported before"}},
)
async def import_agent(
    request: Request,
    response: Response,
    user: CurrentUser,
    repos: ReposDep,
    search: SearchDep,
    settings: SettingsDep,
) -> ImportOut:
    """An export file (or a Letta `.af` agent file) as the request body, streamed, at most
    MAX_IMPORT_BYTES. It lands in your tenant only; importing it again changes nothing."""
    reports = await service.import_body(
        repos, search, user.email, request.stream(), limit=settings.max_import_bytes
    )
    if any(r.created for r in reports):
        response.status_code = status.HTTP_201_CREATED
    return ImportOut(agents=[ImportedAgent.model_validate(r.as_json()) for r in reports])
