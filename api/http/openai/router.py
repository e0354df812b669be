"""/v1: OpenAI's Chat Completions and Models endpoints, where a model is one of the
caller's agents (docs/openai-compatible.md). Authentication is the API's own; every error
leaves in OpenAI's shape (`OpenAIRoute`)."""

from typing import Annotated

from fastapi import Header
from fastapi.responses import JSONResponse, Response

from api.http.contract.errors import Responses, errors
from api.http.deps.app import ClockDep, ReposDep, SettingsDep
from api.http.deps.auth import CurrentUser
from api.http.deps.runtime import RuntimeDep
from api.http.openai import service, translate
from api.http.openai.errors import (
    InvalidJson,
    InvalidValue,
    MissingParameter,
    ModelNotFound,
    OpenAIRoute,
    Unsupported,
)
from api.http.openai.schemas import ChatCompletion, ChatCompletionIn, ErrorOut, ModelList
from api.http.route_filter import Router
from api.http.sse import TurnStream, run_events, run_headers
from api.runtime.runner import TURN_FAILURES

router = Router(prefix="/v1", tags=["OpenAI-compatible"], route_class=OpenAIRoute)

# Every error in OpenAI's shape (a 409 `conversation_busy` comes after waiting 60 s, or at
# once with `X-Wait: false`).
ERRORS = errors(ModelNotFound, 500, 503, model=ErrorOut)
CHUNK = {
    "type": "object",
    "title": "chat.completion.chunk",
    "required": ["data"],
    "properties": {
        "data": {
            "type": "string",
            "description": "A `chat.completion.chunk` as JSON, or `[DONE]` last; an `error` "
            "object in OpenAI's shape when the turn fails after it began.",
        }
    },
}
COMPLETION_RESPONSES: Responses = {
    200: {
        "model": ChatCompletion,
        "description": "A `chat.completion`, or with `stream: true` Server-Sent Events of "
        "`chat.completion.chunk`s ending with `data: [DONE]`.",
        "content": {"text/event-stream": {"itemSchema": CHUNK}},
    },
    **errors(
        InvalidValue,
        MissingParameter,
        InvalidJson,
        Unsupported,
        ModelNotFound,
        *TURN_FAILURES,
        500,
        503,
        model=ErrorOut,
    ),
}

SessionHeader = Annotated[
    str | None,
    Header(
        alias=translate.SESSION_HEADER,
        description="The session (conversation) of the agent; overrides the body's `user`. "
        "Neither: the agent's default session, as POST /chat's.",
    ),
]
WaitHeader = Annotated[
    str | None,
    Header(
        alias=translate.WAIT_HEADER,
        description="`false`: a busy conversation answers 409 at once instead of being "
        "waited for (up to 60 s).",
    ),
]


@router.post(
    "/chat/completions",
    operation_id="openai_chat_completions",
    response_model=None,
    responses=COMPLETION_RESPONSES,
)
async def chat_completions(
    body: ChatCompletionIn,
    user: CurrentUser,
    repos: ReposDep,
    clock: ClockDep,
    runtime: RuntimeDep,
    settings: SettingsDep,
    session: SessionHeader = None,
    wait: WaitHeader = None,
) -> Response:
    """One turn of the agent `model` names, with its own provider and memory; only the last
    user message is new input."""
    prepared = await service.open_turn(
        repos, clock, runtime, user.email, body, session_header=session, wait_header=wait
    )
    completion = translate.Completion.of(prepared.turn.state.run_id, clock.now(), body.model)
    if not body.stream:
        answer = await service.answer(prepared, completion)
        return JSONResponse(answer.model_dump(mode="json"), headers=run_headers(prepared))
    include_usage = body.stream_options is not None and body.stream_options.include_usage
    # No Run-Id header: an Idempotency-Key retry would re-attach to the run's own events,
    # which an OpenAI client cannot read. The completion's id names the run.
    chunks = completion.chunks(
        run_events(prepared, grace_seconds=0),
        lambda: prepared.failure,
        include_usage=include_usage,
    )
    return TurnStream(prepared, chunks, ping_seconds=settings.sse_ping_seconds, headers={})


@router.get("/models", operation_id="openai_list_models", responses=ERRORS)
async def list_models(user: CurrentUser, repos: ReposDep) -> ModelList:
    """Your agents as OpenAI models: what clients list before they pick one."""
    return await service.models(repos, user.email)
