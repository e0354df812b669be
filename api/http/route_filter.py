"""Routing that does not try every router on every request.

Since FastAPI 0.137 an included router stays a node of its own, and finding a request's
route asks each node in turn, which tries each of its routes at several microseconds a
try (scope bookkeeping around a regular expression). `POST /context/{agent_name}`, in
the tenth router, was tried against about 50 routes first: 0.1 to 0.3 ms of CPU per
request, more than its store round trips cost the event loop (docs/performance.md).

Every router of the app is a `Router`: an APIRouter whose `matches` first checks the
request's path, and answers "no match" at once when its first segment starts none of the
router's routes, as the router would have after trying them all. A router with a route
whose first segment is a parameter (`/{x}`) keeps trying every request. Order, 405s (a
route of the path, another method) and slash redirects are unchanged: a skipped router is
one that matched nothing.

This overrides a public method of a public class, but that FastAPI asks it at all (the
node of an included router calls its router's `matches`) is FastAPI's own working, not a
documented promise: tests/app/test_route_filter.py fails if the check stops being asked,
and tests/app/test_library_versions.py keeps FastAPI within the versions it was checked
on. Nothing public does as well (bench only, the route's handling left out, µs of CPU for
`POST /messages` and `POST /context/bench`): no check, 57 and 72; the routers' routes put
straight into the app's (one flat list, no nodes), 30 and 36; an APIRouter in front of
each router, including it, 20 and 44; this, 15 and 31 (the check set on FastAPI's node of
each router, as before, skipped the node's own bookkeeping too: 13 and 29)."""

from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from api.http.unicode_body import TextRoute


class Router(APIRouter):
    """An APIRouter that skips the requests none of its routes can match by the first
    segment of their path. Include it in the app without a prefix (as every router of
    ours is): its routes' paths, its own prefix in them, are read as the app serves them.
    Its routes refuse JSON bodies holding text that is not Unicode (`TextRoute`)."""

    _firsts: frozenset[str] | None = None
    _firsts_of = -1  # how many routes `_firsts` was read from: they are read again if added

    def __init__(self, *, route_class: type[APIRoute] = TextRoute, **kwargs: Any) -> None:
        super().__init__(route_class=route_class, **kwargs)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        # Only plain HTTP requests at the app's root: a root_path moves where routes start.
        if scope["type"] == "http" and not scope.get("root_path"):
            if self._firsts_of != len(self.routes):
                self._firsts, self._firsts_of = first_segments(self.routes), len(self.routes)
            firsts = self._firsts
            if firsts is not None and first_segment(scope["path"]) not in firsts:
                return Match.NONE, {}
        return super().matches(scope)


def first_segments(routes: Iterable[BaseRoute]) -> frozenset[str] | None:
    """The first path segments of `routes`; None when one of them is a parameter, or a
    route has no path to read (a router included in this one, say). Read from the routes'
    paths, not from FastAPI's per-route contexts: building those for every route at
    start-up cost 50-60 ms of the server's cold start."""
    firsts: set[str] = set()
    for route in routes:
        path = getattr(route, "path", None)
        if not isinstance(path, str):
            return None
        first = first_segment(path)
        if "{" in first:
            return None
        firsts.add(first)
    return frozenset(firsts)


def first_segment(path: str) -> str:
    return path.split("/", 2)[1] if path.startswith("/") else path
