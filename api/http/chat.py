"""/chat: one turn with an agent, by actor and session (seed 001)."""

from typing import Annotated

from fastapi import Header
from fastapi.responses import Response

from api.chat import service
from api.chat.schemas import ChatIn
from api.chat.service import NotYourUserId
from api.http.contract import streams
from api.http.contract.errors import errors
from api.http.deps.app import ClockDep, ReposDep, SettingsDep
from api.http.deps.auth import CurrentUser
from api.http.deps.runtime import RuntimeDep
from api.http.responses import IdempotencyKey, respond
from api.http.route_filter import Router
from api.runtime.runner import TURN_FAILURES

router = Router(tags=["chat"])


@router.post(
    "/chat",
    operation_id="chat",
    response_model=None,
    responses={**streams.turn(), **errors(NotYourUserId, *TURN_FAILURES)},
)
async def chat(
    body: ChatIn,
    user: CurrentUser,
    repos: ReposDep,
    clock: ClockDep,
    runtime: RuntimeDep,
    settings: SettingsDep,
    accept: Annotated[str | None, Header()] = None,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Run one turn. Streams Server-Sent Events (see docs/sse.md) unless `stream` is false
    or the client accepts only JSON."""
    prepared = await service.open_turn(repos, clock, runtime, user.email, body)
    return await respond(
        prepared,
        stream=body.stream,
        accept=accept,
        settings=settings,
        resumable=idempotency_key is not None,
    )
