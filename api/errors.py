"""The one error hierarchy: every error the API returns carries its status and a stable code."""

from typing import Any


class AppError(Exception):
    """Base of every error a client can see. Subclasses set `status_code` and `code`."""

    status_code: int = 500
    code: str = "internal_error"
    public: bool = False  # a 5xx message reaches clients only when it holds no internals

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def headers(self) -> dict[str, str]:
        """Response headers that go with the error (an ETag, a Retry-After)."""
        return {}

    def to_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


SERVER_MESSAGE = "Something went wrong on our side."
SERVER_MESSAGES = {503: "The service is temporarily unavailable; try again shortly."}


def public_body(exc: AppError) -> dict[str, object]:
    """What a client may see. Server-side failures keep their code but not their message,
    which can hold engine internals (paths, endpoints, raw database errors)."""
    if exc.status_code < 500 or exc.public:
        return exc.to_body()
    return {"code": exc.code, "message": SERVER_MESSAGES.get(exc.status_code, SERVER_MESSAGE)}


class NotFound(AppError):
    status_code = 404
    code = "not_found"


class BadRequest(AppError):
    status_code = 400
    code = "bad_request"
