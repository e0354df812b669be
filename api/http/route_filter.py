"""Routing that does not try every router on every request.

Since FastAPI 0.137 an included router stays a node of its own, and finding a request's
route asks each node in turn, which tries each of its routes at several microseconds a
try (scope bookkeeping around a regular expression). `POST /context/{agent_name}`, in
the tenth router, was tried against about 50 routes first: 0.1 to 0.3 ms of CPU per
request, more than its store round trips cost the event loop (docs/performance.md).

`skip_unrelated_routers` gives each included router a first check: a request whose
path's first segment starts none of the router's routes cannot match any of them, so the
router answers "no match" at once, as it would have after trying them all. A router with
a route whose first segment is a parameter (`/{x}`) keeps trying every request. Order,
405s (a route of the path, another method) and slash redirects are unchanged: a skipped
router is one that matched nothing."""

from collections.abc import Callable, Iterator

from fastapi import FastAPI
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

Matches = Callable[[Scope], tuple[Match, Scope]]


def skip_unrelated_routers(app: FastAPI) -> None:
    """Call once the app's routers are included."""
    for route in app.router.routes:
        if not hasattr(route, "original_router"):  # a plain route, not an included router
            continue
        firsts = first_segments(route)
        if firsts is not None:
            # The included router node belongs to this app alone (the router it wraps is
            # shared by every app a process builds): the check goes on the node.
            setattr(route, "matches", _checked(route.matches, firsts))  # noqa: B010


def first_segments(included: BaseRoute) -> frozenset[str] | None:
    """The first path segments of every route under `included`, with their prefixes;
    None when one of them is a parameter, or a route has no path to read. Read from the
    routes' paths and the include prefixes, not from FastAPI's per-route contexts: building
    those for every route at start-up cost 50-60 ms of the server's cold start."""
    firsts: set[str] = set()
    for template in _paths(included, ""):
        if template is None:
            return None
        first = first_segment(template)
        if "{" in first:
            return None
        firsts.add(first)
    return frozenset(firsts)


def _paths(included: BaseRoute, outer_prefix: str) -> Iterator[str | None]:
    prefix = outer_prefix + getattr(getattr(included, "include_context", None), "prefix", "")
    for route in getattr(included, "original_router").routes:  # noqa: B009
        if hasattr(route, "original_router"):
            yield from _paths(route, prefix)
            continue
        path = getattr(route, "path", None)
        yield prefix + path if isinstance(path, str) else None


def first_segment(path: str) -> str:
    return path.split("/", 2)[1] if path.startswith("/") else path


def _checked(matches: Matches, firsts: frozenset[str]) -> Matches:
    def checked(scope: Scope) -> tuple[Match, Scope]:
        # Only plain HTTP requests at the app's root: a root_path moves where routes start.
        if (
            scope["type"] == "http"
            and not scope.get("root_path")
            and first_segment(scope["path"]) not in firsts
        ):
            return Match.NONE, {}
        return matches(scope)

    return checked
