"""The routers' first check (api/http/route_filter.py) never changes which route a request
reaches: for every path of the app, in both auth modes, with every method and with and
without a trailing slash, each router answers what it answered without the check. And
FastAPI still asks it: were the check passed over, routing would try every router again."""

import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

import api.http
from api.config import Settings
from api.http.openai import router as openai_compat
from api.http.route_filter import Router, first_segments
from api.main import create_app

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
JWT_SECRET = "s" * 40


def settings_for(mode: str, tmp_path: Path) -> Settings:
    if mode == "local":
        return Settings(sqlite_path=tmp_path / "app.db", encryption_key="k" * 40)
    return Settings(
        sqlite_path=tmp_path / "app.db",
        auth_mode="google",
        public_url="http://127.0.0.1",
        jwt_secret=JWT_SECRET,
        encryption_key="e" * 40,
        google_client_id="id",
        google_client_secret="secret",
        frontend_url="http://localhost:5173",
    )


def sample_paths(app: FastAPI) -> set[str]:
    """Each route's template with its parameters filled, with and without a final
    slash, the literal words alone, and paths no route serves."""
    paths = {"/", "", "/nowhere", "/nowhere/at/all", "/agents/", "/context", "/v1"}
    for context in iter_route_contexts(app.router.routes):
        template = getattr(context, "path_format", None)
        if not isinstance(template, str):
            continue
        filled = re.sub(r"\{[^}]+\}", "x1", template)
        paths |= {filled, filled + "/", filled.rstrip("/") or "/"}
        paths |= {"/" + part for part in filled.split("/") if part}
    return paths


def scope(method: str, path: str) -> Scope:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}


def answers(routes: list[BaseRoute], paths: set[str]) -> list[Match]:
    return [
        route.matches(scope(method, path))[0]
        for route in routes
        for path in sorted(paths)
        for method in METHODS
    ]


@pytest.mark.parametrize("mode", ["local", "google"])
def test_every_router_answers_as_it_did_without_the_check(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = create_app(settings_for(mode, tmp_path))
    paths = sample_paths(app)
    routes = list(app.router.routes)
    checked = answers(routes, paths)
    monkeypatch.setattr(Router, "matches", APIRouter.matches)
    assert checked == answers(routes, paths)


@pytest.mark.parametrize("mode", ["local", "google"])
def test_a_request_asks_only_the_routers_its_first_segment_starts(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What keeps routing cheap: FastAPI asks each router's `matches` (the node of an
    included router calls it), and all but one answer at once. If this fails after an
    upgrade, FastAPI no longer asks: see docs/performance.md, "Routing"."""
    asked: list[APIRouter] = []
    tried: list[APIRouter] = []
    check, full = Router.matches, APIRouter.matches

    def asking(router: Router, scope: Scope) -> tuple[Match, Scope]:
        asked.append(router)
        return check(router, scope)

    def trying(router: APIRouter, scope: Scope) -> tuple[Match, Scope]:
        tried.append(router)
        return full(router, scope)

    monkeypatch.setattr(Router, "matches", asking)
    monkeypatch.setattr(APIRouter, "matches", trying)
    app = create_app(settings_for(mode, tmp_path))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        asked.clear()
        assert client.get("/nowhere").status_code == 404
        assert len({id(r) for r in asked}) >= 10  # every router asked, as FastAPI walks them
        assert tried == []  # none went on to try its routes
        tried.clear()
        assert client.get("/v1/models").status_code in (200, 401)  # the 13th router's
    assert {id(r) for r in tried} == {id(openai_compat.router)}


def test_every_router_of_the_wing_is_checked() -> None:
    """A plain APIRouter would be tried on every request."""
    plain = []
    for module in pkgutil.walk_packages(api.http.__path__, "api.http."):
        router = getattr(importlib.import_module(module.name), "router", None)
        if isinstance(router, APIRouter) and not isinstance(router, Router):
            plain.append(module.name)
    assert plain == []


def test_a_router_with_a_parameter_first_is_always_tried() -> None:
    any_first = Router()

    @any_first.get("/{slug}/page")
    async def page(slug: str) -> str:
        return slug

    worded = Router(prefix="/words")

    @worded.get("/{word}")
    async def word(word: str) -> str:
        return word

    app = FastAPI()
    app.include_router(worded)
    app.include_router(any_first)
    words, anything = app.router.routes[-2:]
    assert first_segments(worded.routes) == frozenset({"words"})
    assert first_segments(any_first.routes) is None
    assert words.matches(scope("GET", "/hello/page"))[0] is Match.NONE
    assert anything.matches(scope("GET", "/hello/page"))[0] is Match.FULL
    client = TestClient(app)
    assert client.get("/hello/page").json() == "hello"
    assert client.get("/words/hi").json() == "hi"
    assert client.post("/words/hi").status_code == 405  # another method: still its 405


def test_a_request_under_a_root_path_is_never_skipped() -> None:
    router = Router(prefix="/words")

    @router.get("/{word}")
    async def word(word: str) -> str:
        return word

    app = FastAPI()
    app.include_router(router)
    with TestClient(app, root_path="/api") as client:
        assert client.get("/api/words/hi").json() == "hi"
    (included,) = app.router.routes[-1:]
    under_root = {**scope("GET", "/api/words/hi"), "root_path": "/api"}
    assert included.matches(under_root)[0] is Match.FULL


def test_a_router_with_routers_included_in_it_is_always_tried() -> None:
    inner = APIRouter(prefix="/b")

    @inner.get("/x")
    async def x() -> str:
        return "deep"

    outer = Router(prefix="/a")
    outer.include_router(inner, prefix="/p")
    app = FastAPI()
    app.include_router(outer, prefix="/v1")
    assert first_segments(outer.routes) is None  # an included router has no path to read
    client = TestClient(app)
    assert client.get("/v1/a/p/b/x").json() == "deep"
    assert client.get("/a/p/b/x").status_code == 404


def test_routes_added_later_are_read() -> None:
    router = Router()

    @router.get("/one")
    async def one() -> str:
        return "one"

    app = FastAPI()
    app.include_router(router)
    client = TestClient(app)
    assert client.get("/one").json() == "one"

    @router.get("/two")
    async def two() -> str:
        return "two"

    assert client.get("/two").json() == "two"
