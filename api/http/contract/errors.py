"""The error body every operation documents, and `errors(...)`: the `responses=` of a router
or a route, from the statuses it can answer. Routes with errors of their own shape (seed
004's, OpenAI's) pass their model; the descriptions say which codes each status carries."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.errors import AppError
from api.kit.model import ApiModel

Responses = dict[int | str, dict[str, Any]]


class ErrorBody(ApiModel):
    """What every error of the API is, but those of `/v1` (OpenAI's shape) and `/memory/*`
    (seed 004's): a stable `code` to branch on, a message for a person, and the id of the
    request, also sent in the `X-Request-ID` header, to quote when reporting it."""

    model_config = ConfigDict(extra="allow")

    code: str = Field(description="Stable and machine-readable, e.g. `agent_not_found`.")
    message: str = Field(description="What went wrong, for a person.")
    request_id: str = Field(description="The request's id, as in its X-Request-ID header.")
    details: dict[str, Any] | None = Field(
        default=None,
        description="More about some errors: the fields at fault of a `validation_error`, the "
        "current version of a `version_mismatch`, ...",
    )


# What each status means across the API; a route's own codes are added where it names them.
STATUSES: dict[int, str] = {
    400: "The request cannot be served as it is (an invalid Idempotency-Key, If-Match or "
    "cursor, a value the service refuses).",
    401: "Not signed in: send `Authorization: Bearer <access token or API key>` (google mode).",
    403: "Refused: in local mode a Host or Origin that is not the server's own "
    "(`host_rejected`, `origin_rejected`); otherwise what the code says.",
    404: "What the path or the body names does not exist, or is another user's.",
    409: "In conflict with the current state; a request with an Idempotency-Key whose first "
    "send is still running (`idempotency_request_in_progress`, with Retry-After).",
    412: "`version_mismatch`: If-Match named a version that is no longer the current one; "
    "the current one is in the ETag header and in `details`.",
    413: "`payload_too_large`: the body is over MAX_REQUEST_BYTES; `item_too_large`: what it "
    "would store is over the store's 400 KB item limit; `document_too_large`: an uploaded "
    "file over DOCUMENT_MAX_BYTES.",
    415: "`unsupported_document_type`: an uploaded file of a type the service does not read.",
    422: "`validation_error`: the body, query, path or headers do not match this operation "
    "(each field at fault in `details.errors`); `idempotency_key_reused`: the "
    "Idempotency-Key was sent with another request.",
    429: "`provider_rate_limited`: the agent's LLM provider refused for now.",
    431: "`request_headers_too_large`: more than 100 headers.",
    500: "`internal_error` or `store_error`: a failure on our side (the log has it, under the "
    "request's id).",
    502: "The LLM or the embedding provider failed: `provider_unavailable`, "
    "`embedding_failed`, ...",
    503: "Unavailable for now, retry shortly: the store (`store_unavailable`, "
    "`store_throttled`, `table_missing`) or too many writers at once (`memory_busy`, ...).",
    504: "`provider_timeout`: the LLM provider did not answer in time.",
}


def errors(*raised: int | type[AppError], model: type[BaseModel] = ErrorBody) -> Responses:
    """`responses=` documenting these statuses, or the statuses of these errors (their
    codes are listed), each with `model` as its body."""
    codes: dict[int, list[str]] = {}
    for item in raised:
        status = item if isinstance(item, int) else item.status_code
        found = codes.setdefault(status, [])
        if not isinstance(item, int) and item.code not in found:
            found.append(item.code)
    return {
        status: {"model": model, "description": describe(status, codes[status])}
        for status in sorted(codes)
    }


def describe(status: int, codes: list[str]) -> str:
    text = STATUSES.get(status, "An error.")
    if codes:
        text += " Codes include " + ", ".join(f"`{c}`" for c in codes) + "."
    return text
