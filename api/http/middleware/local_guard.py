"""AUTH_MODE=local has no login, so a browser must not be turned against it: pages on other
sites may not call it (Origin), and a hostile DNS name pointed at 127.0.0.1 may not reach it
(Host, against DNS rebinding)."""

import re

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from api.config import LOOPBACK_HOSTS
from api.http.errors import json_error


class LocalModeGuard:
    def __init__(self, app: ASGIApp, *, allowed_origins: set[str], hosts: set[str]) -> None:
        self.app = app
        self.allowed_origins = allowed_origins
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            refusal = self._refusal(headers)
            if refusal is not None:
                code, message = refusal
                await json_error({"code": code, "message": message}, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, headers: Headers) -> tuple[str, str] | None:
        if host_of(headers.get("host", "")) not in self.hosts:
            return "host_rejected", "The local server only answers requests to its own names."
        origin = headers.get("origin")
        if origin is not None and origin not in self.allowed_origins and not _loopback(origin):
            return "origin_rejected", "The local server only answers pages of its frontend."
        return None


# A host and an optional port, nothing else: a URL parser would read "evil.com@localhost"
# or "localhost#.evil.com" as localhost, while a browser sent them for another name.
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?")
_ORIGIN = re.compile(r"https?://(" + _HOST.pattern + r")")


def host_of(value: str) -> str | None:
    """The host name a Host header names, lower-cased and without IPv6 brackets; None for
    anything that is not a host and an optional port."""
    found = _HOST.fullmatch(value.strip())
    if found is None:
        return None
    return found.group(1).strip("[]").lower()


def _loopback(origin: str) -> bool:
    found = _ORIGIN.fullmatch(origin.strip())
    return found is not None and host_of(found.group(1)) in LOOPBACK_HOSTS
