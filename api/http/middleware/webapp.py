"""Serves the built single-page app beside the API, on the same origin.

Plain ASGI in front of the routes, so the app's files need no route (and no tenancy check:
they name nothing of anyone) and every API path answers as before:

- `/assets/*`: the built files, named by their content's hash, so cached for a year;
- a page: a GET whose `Accept` names `text/html` (a browser opening a URL) for `/`, for one
  of the app's pages (`web/src/pages.json`, the one list the app's router reads too: some
  share their paths with the API, such as seed 004's `dashboard_url`), or for a path no
  API route serves, gets `index.html` (never cached, so a new build shows at once), with
  the server's AUTH_MODE written in;
- anything else goes on to the API: its fetches ask for JSON or event streams, not HTML.

What it answers is counted under the route label `/{webapp}`, not as unmatched.
"""

import json
import os
import re
from mimetypes import guess_type
from pathlib import Path

import anyio
from starlette.responses import FileResponse, Response
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from api.http.errors import json_error
from api.http.middleware.observability import ROUTE_LABEL


def web_files() -> tuple[Path, Path]:
    """The built app and its page list (`{page name: "/agents/:id/chat"}`, which routes.tsx
    reads): in an installed wheel, its package data `api/webapp/` (hatch_build.py puts them
    there); in a checkout, `web/dist` and `web/src/pages.json`."""
    packaged = Path(__file__).resolve().parents[2] / "webapp"
    if packaged.is_dir():
        return packaged / "dist", packaged / "pages.json"
    web = Path(__file__).resolve().parents[3] / "web"
    return web / "dist", web / "src" / "pages.json"


DIST, PAGES_FILE = web_files()
ROUTE = "/{webapp}"  # the metrics' and traces' route label of everything served here
ASSETS = "/assets/"
# Vite writes flat, hashed names: anything else (a dot-dot, a slash) is not one of them.
ASSET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
IMMUTABLE = "public, max-age=31536000, immutable"
# The build's compressed copies of an asset, best first, and what each is sent as.
ENCODINGS = ((".br", "br"), (".gz", "gzip"))
COPIES = tuple(suffix for suffix, _ in ENCODINGS)
PAGE_HEADERS = {
    "cache-control": "no-cache",
    "x-content-type-options": "nosniff",
    "content-security-policy": (
        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; "
        "form-action 'self'"
    ),
    "referrer-policy": "same-origin",
}
NOT_BUILT = (
    "The web app is not built: web/dist is missing. `./dev serve` builds it (Node 20.19+ and "
    "npm needed), or build it by hand with `cd web && npm ci && npm run build`."
)


def page_paths(file: Path = PAGES_FILE) -> re.Pattern[str]:
    """One pattern matching every page of the app: `:name` is one path segment, and a
    trailing slash is allowed, as the app's router allows it. Without the file (a source
    tree without `web/`), no path is a page."""
    try:
        patterns: dict[str, str] = json.loads(file.read_text())
    except FileNotFoundError:
        return re.compile(r"(?!)")
    alternatives = [
        "".join(
            "/[^/]+" if part.startswith(":") else "/" + re.escape(part)
            for part in pattern.split("/")
            if part
        )
        for pattern in patterns.values()
    ]
    return re.compile(f"(?:{'|'.join(alternatives)})/?")


# Read on import: Starlette builds its middleware on the first request, inside the loop.
PAGES = page_paths()


class WebApp:
    def __init__(
        self,
        app: ASGIApp,
        *,
        dist: Path | None = None,
        auth_mode: str = "local",
    ) -> None:
        self.app = app
        self.dist = dist or DIST
        self.meta = f'<meta name="auth-mode" content="{auth_mode}">'.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            path: str = scope["path"]
            if path.startswith(ASSETS):
                accepted = dict(scope["headers"]).get(b"accept-encoding", b"")
                response = await self._asset(path.removeprefix(ASSETS), accepted)
                if response is not None:
                    scope[ROUTE_LABEL] = ROUTE
                    await response(scope, receive, send)
                    return
            elif self._is_page(scope, path):
                scope[ROUTE_LABEL] = ROUTE
                await (await self._index())(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _is_page(self, scope: Scope, path: str) -> bool:
        accept = dict(scope["headers"]).get(b"accept", b"")
        if b"text/html" not in accept:
            return path == "/"  # `curl /` learns what is there, or how to build it
        if path == "/" or PAGES.fullmatch(path):
            return True
        # Starlette sets scope["app"] before its middleware runs.
        routes = getattr(getattr(scope.get("app"), "router", None), "routes", ())
        return all(route.matches(scope)[0] is Match.NONE for route in routes)

    async def _asset(self, name: str, accepted: bytes) -> Response | None:
        """The file, as the build's brotli or gzip copy when the browser takes one (the
        build writes them: web/scripts/compress.mjs)."""
        if not ASSET_NAME.fullmatch(name) or name.endswith(COPIES):
            return None
        file = self.dist / "assets" / name
        headers = {"cache-control": IMMUTABLE, "vary": "accept-encoding"}
        for suffix, encoding in ENCODINGS:
            if encoding.encode() in accepted:
                try:
                    stat = await anyio.to_thread.run_sync(os.stat, f"{file}{suffix}")
                except OSError:
                    continue
                return FileResponse(
                    f"{file}{suffix}",
                    stat_result=stat,
                    media_type=guess_type(name)[0],
                    headers={**headers, "content-encoding": encoding},
                )
        try:
            stat = await anyio.to_thread.run_sync(os.stat, file)
        except OSError:
            return None  # the API's 404
        return FileResponse(file, stat_result=stat, headers=headers)

    async def _index(self) -> Response:
        try:
            page = await anyio.Path(self.dist / "index.html").read_bytes()
        except OSError:
            return json_error({"code": "web_app_not_built", "message": NOT_BUILT}, 503)
        page = page.replace(b"</head>", self.meta + b"</head>", 1)
        return Response(page, media_type="text/html", headers=PAGE_HEADERS)
