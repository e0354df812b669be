"""Why a request sent with an Idempotency-Key is refused, as the draft names the cases."""

from api.errors import AppError

MAX_KEY_LENGTH = 255
# parse_key's rule as a JSON Schema pattern, for the OpenAPI document: 1 to 255 printable
# ASCII characters, or those within double quotes (never `""`); spaces around it are not
# part of it.
KEY_PATTERN = r'^(?:[!-~]|[!#-~][!-~]|"[!#-~]|[!-~][ -~]{1,253}[!-~]|"[ -~]{254,255}")$'


class InvalidIdempotencyKey(AppError):
    status_code = 400
    code = "invalid_idempotency_key"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            message
            or f"An Idempotency-Key is 1 to {MAX_KEY_LENGTH} printable ASCII characters, "
            'quoted or not (`"abc"` or `abc`); a random UUID makes a good one.'
        )


class IdempotencyKeyReused(AppError):
    status_code = 422
    code = "idempotency_key_reused"

    def __init__(self) -> None:
        super().__init__(
            "This Idempotency-Key was already used for a different request (another method, "
            "path, query or body). Use a new key for a new request."
        )


class RequestInProgress(AppError):
    status_code = 409
    code = "idempotency_request_in_progress"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            message
            or "The first request sent with this Idempotency-Key is still running; retry "
            "shortly to get its answer."
        )

    def headers(self) -> dict[str, str]:
        return {"Retry-After": "1"}
