"""/runs: a turn's state, and its events again (docs/sse.md, "Resuming a stream")."""

from typing import Annotated

from fastapi import Header
from fastapi.responses import Response
from starlette.types import Scope

from api.config import Settings
from api.errors import BadRequest
from api.http.contract import streams
from api.http.contract.errors import errors
from api.http.deps.app import ClockDep, ReposDep, SettingsDep
from api.http.deps.auth import CurrentUser
from api.http.deps.runtime import RuntimeDep
from api.http.route_filter import Router
from api.http.sse import replayed_stream
from api.journal import reader as service
from api.journal.models import Run
from api.journal.schemas import RunOut
from api.kit.clock import Clock
from api.repositories import Repositories
from api.runtime.runner import Runtime

router = Router(prefix="/runs", tags=["runs"])

MAX_EVENT_ID_DIGITS = 9


class InvalidLastEventId(BadRequest):
    code = "invalid_last_event_id"


def _after(last_event_id: str | None) -> int:
    if last_event_id is None or not last_event_id.strip():
        return 0
    value = last_event_id.strip()
    if not value.isascii() or not value.isdigit() or len(value) > MAX_EVENT_ID_DIGITS:
        raise InvalidLastEventId(
            "Last-Event-ID must be the `id` of an event of this run (a whole number)."
        )
    return int(value)


EVENTS_RESPONSES = streams.run_events(
    "The run's events after Last-Event-ID, then live until it ends (docs/sse.md)."
)


@router.get("/{run_id}", operation_id="runs_get", responses=errors(service.RunNotFound))
async def get_run(run_id: str, user: CurrentUser, repos: ReposDep) -> RunOut:
    """Whether a turn is running, how it ended, and what it used: the memories and past
    messages that entered its context, and the blocks its prompt held."""
    return RunOut.of(await service.owned(repos, user.email, run_id))


@router.get(
    "/{run_id}/events",
    operation_id="runs_events",
    response_model=None,
    responses={**EVENTS_RESPONSES, **errors(InvalidLastEventId, service.RunNotFound)},
)
async def run_events(
    run_id: str,
    user: CurrentUser,
    repos: ReposDep,
    clock: ClockDep,
    runtime: RuntimeDep,
    settings: SettingsDep,
    last_event_id: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            description="The `id` of the last event received: the stream resumes after it.",
            json_schema_extra={"pattern": r"^[ \t]*(?:[0-9]{1,9}[ \t]*)?$"},
        ),
    ] = None,
) -> Response:
    """A turn's events from the start, or after `Last-Event-ID`, and then as they happen
    until it ends: on any replica, after a restart too (a turn whose process died ends
    as interrupted). While a client follows it, a turn whose own client left goes on."""
    after = _after(last_event_id)
    run = await service.owned(repos, user.email, run_id)
    return _events_of(run, repos, clock, runtime, settings, after=after)


async def resume(scope: Scope, email: str, run_id: str) -> Response:
    """The answer to a turn's request sent again with its Idempotency-Key (the
    idempotency middleware's hook): the run's events from the first, then live."""
    state = scope["state"]
    repos: Repositories = state["repos"]
    run = await service.owned(repos, email, run_id)
    return _events_of(run, repos, state["clock"], state["runtime"], state["settings"], after=0)


def _events_of(
    run: Run, repos: Repositories, clock: Clock, runtime: Runtime, settings: Settings, *, after: int
) -> Response:
    stored = service.follow(
        repos, clock, runtime.runs, run, after=after, watch_seconds=settings.run_resume_seconds
    )
    return replayed_stream(run.run_id, stored, ping_seconds=settings.sse_ping_seconds)
