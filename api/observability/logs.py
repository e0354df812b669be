"""Log lines as text (the default) or as JSON objects, one a line (LOG_FORMAT=json), each
with the request id it was written for. `configure` installs one handler on the root
logger; the server's own loggers (uvicorn's) propagate to it (`serve` starts uvicorn with
no logging configuration of its own)."""

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from api.config import Settings
from api.observability import request_id
from api.observability.request_id import RequestIdFilter

LogFormat = Literal["text", "json"]
TEXT = "%(levelname)s %(name)s [%(request_id)s]: %(message)s"

# What every LogRecord has: anything else on a record came as `extra=` and goes into the
# JSON object as a field of its own (the access log's method, route, status, ...).
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "request_id",
    "taskName",
    "color_message",  # uvicorn's message again, with terminal colours
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": _request_id(record),
        }
        for name, value in vars(record).items():
            if name not in _STANDARD and not name.startswith("_"):
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def _request_id(record: logging.LogRecord) -> str | None:
    found = getattr(record, "request_id", None)
    return None if found in (None, request_id.NONE) else str(found)


class _Handler(logging.StreamHandler[TextIO]):
    """Ours, so that configuring again replaces it rather than adding a second."""


def configure(level: str, log_format: LogFormat, stream: TextIO | None = None) -> logging.Handler:
    """One handler on the root logger writing `log_format` lines to `stream` (stderr)."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    handler = _Handler(stream or sys.stderr)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT))
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler


def configure_logging(settings: Settings) -> logging.Handler:
    """`configure` as the settings say (LOG_LEVEL, LOG_FORMAT)."""
    return configure(settings.log_level, settings.log_format)
