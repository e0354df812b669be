"""The routers' first check (api/kit/route_filter.py) never changes which route a request
reaches: for every path of the app, in both auth modes, with every method and with and
without a trailing slash, each router answers what it answered without the check."""

import re
from pathlib import Path

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient
from starlette.routing import Match
from starlette.types import Scope

from api.config import Settings
from api.http.route_filter import first_segments, skip_unrelated_routers
from api.main import create_app

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
JWT_SECRET = "s" * 40


def settings_for(mode: str, tmp_path: Path) -> Settings:
    if mode == "local":
        return Settings(sqlite_path=tmp_path / "app.db", encryption_key="k" * 40)
    return Settings(
        sqlite_path=tmp_path / "app.db",
        auth_mode="google",
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


@pytest.mark.parametrize("mode", ["local", "google"])
def test_every_router_answers_as_it_did_without_the_check(mode: str, tmp_path: Path) -> None:
    app = create_app(settings_for(mode, tmp_path))
    checked = [r for r in app.router.routes if "matches" in vars(r)]
    assert len(checked) >= 10  # the check is on: most routers start with a word of their own
    for route in checked:
        unchecked = type(route).matches
        for path in sample_paths(app):
            for method in METHODS:
                with_check, _ = route.matches(scope(method, path))
                without, _ = unchecked(route, scope(method, path))
                assert with_check == without, (method, path)


def test_a_router_with_a_parameter_first_is_always_tried() -> None:
    any_first = APIRouter()

    @any_first.get("/{slug}/page")
    async def page(slug: str) -> str:
        return slug

    worded = APIRouter(prefix="/words")

    @worded.get("/{word}")
    async def word(word: str) -> str:
        return word

    app = FastAPI()
    app.include_router(worded)
    app.include_router(any_first)
    skip_unrelated_routers(app)
    words, anything = app.router.routes[-2:]
    assert first_segments(words) == frozenset({"words"})
    assert first_segments(anything) is None
    assert "matches" not in vars(anything)
    assert words.matches(scope("GET", "/hello/page"))[0] is Match.NONE
    client = TestClient(app)
    assert client.get("/hello/page").json() == "hello"
    assert client.get("/words/hi").json() == "hi"
    assert client.post("/words/hi").status_code == 405  # another method: still its 405


def test_a_request_under_a_root_path_is_never_skipped() -> None:
    router = APIRouter(prefix="/words")

    @router.get("/{word}")
    async def word(word: str) -> str:
        return word

    app = FastAPI()
    app.include_router(router)
    skip_unrelated_routers(app)
    with TestClient(app, root_path="/api") as client:
        assert client.get("/api/words/hi").json() == "hi"
    (included,) = [r for r in app.router.routes if "matches" in vars(r)]
    under_root = {**scope("GET", "/api/words/hi"), "root_path": "/api"}
    assert included.matches(under_root)[0] is Match.FULL


def test_routers_included_in_included_routers_are_read_through() -> None:
    inner = APIRouter(prefix="/b")

    @inner.get("/x")
    async def x() -> str:
        return "deep"

    outer = APIRouter(prefix="/a")
    outer.include_router(inner, prefix="/p")
    app = FastAPI()
    app.include_router(outer, prefix="/v1")
    skip_unrelated_routers(app)
    (included,) = [r for r in app.router.routes if hasattr(r, "original_router")]
    assert first_segments(included) == frozenset({"v1"})
    assert "matches" in vars(included)  # checked, not left to try everything
    client = TestClient(app)
    assert client.get("/v1/a/p/b/x").json() == "deep"
    assert client.get("/a/p/b/x").status_code == 404
