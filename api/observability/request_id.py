"""The id of the request being served: taken from `X-Request-ID` when it is well-formed,
made otherwise; sent back in the same header, in every error body and in every log line.

It lives in a contextvar that the outermost middleware sets and never resets: every
request runs in a task of its own, so the value ends with the task, and whatever the
request starts (a turn's task, a background write) inherits it, as do the handlers that
answer after the middleware returned (Starlette's ServerErrorMiddleware)."""

import logging
import re
import uuid
from contextvars import ContextVar

HEADER = "X-Request-ID"
RAW_HEADER = b"x-request-id"
# Conservative: what a proxy or a client is likely to send (UUIDs, hex, ULIDs, dotted ids),
# and nothing that could break a log line or a header; never "-", a line outside requests.
_WELL_FORMED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
NONE = "-"

_current: ContextVar[str | None] = ContextVar("request_id", default=None)


def accept(sent: bytes | None) -> str:
    """The id a request is known by: the one it sent, when well-formed, or a new one."""
    if sent is not None:
        value = sent.decode("latin-1")
        if _WELL_FORMED.fullmatch(value):
            return value
    return uuid.uuid4().hex


def begin(request_id: str) -> None:
    """From here on, this task (and what it starts) serves `request_id`."""
    _current.set(request_id)


def current() -> str | None:
    """The id of the request being served, None outside a request."""
    return _current.get()


class RequestIdFilter(logging.Filter):
    """Gives every record a `request_id` attribute ("-" outside a request), for the
    formatters; installed on the handlers, so it sees the records of every logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = _current.get() or NONE
        return True
