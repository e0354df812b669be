"""The built web app served on the API's origin (api/webapp): pages, hashed files, the API
untouched, and a clear answer when the app was never built."""

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette

from api.config import Settings
from api.http.middleware import webapp as middleware
from api.http.middleware.webapp import PAGES_FILE, WebApp, page_paths
from api.main import create_app
from tests.observability.conftest import grew, scrape

HTML = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
INDEX = '<!doctype html><html><head><title>app</title></head><body id="spa"></body></html>'


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    folder = tmp_path / "dist"
    (folder / "assets").mkdir(parents=True)
    (folder / "index.html").write_text(INDEX)
    (folder / "assets" / "index-AbC123.js").write_text("console.log('app')")
    (tmp_path / "secret.txt").write_text("outside the app")
    return folder


def client_for(tmp_path: Path, dist: Path, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    monkeypatch.setattr(middleware, "DIST", dist)
    settings = Settings(sqlite_path=tmp_path / "w.db", encryption_key="k" * 40)
    # From loopback, as /metrics wants it.
    return TestClient(create_app(settings), base_url="http://127.0.0.1", client=("127.0.0.1", 5))


@pytest.fixture
def client(tmp_path: Path, dist: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    with client_for(tmp_path, dist, monkeypatch) as client:
        yield client


def test_the_root_is_the_app_with_the_auth_mode_and_no_caching(client: TestClient) -> None:
    for headers in (HTML, {"accept": "*/*"}):
        page = client.get("/", headers=headers)
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert '</title><meta name="auth-mode" content="local"></head>' in page.text
        assert page.headers["cache-control"] == "no-cache"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert client.head("/", headers=HTML).status_code == 200


def test_pages_under_agents_are_the_app_for_a_browser_and_json_for_fetches(
    client: TestClient,
) -> None:
    agent = client.post("/agents", json={"name": "Kit"}).json()
    for path in ("/agents", "/agents/new", f"/agents/{agent['id']}", f"/agents/{agent['id']}/chat"):
        page = client.get(path, headers=HTML)
        assert page.status_code == 200, path
        assert 'id="spa"' in page.text, path
    assert (
        client.get("/agents", headers={"accept": "application/json"}).json()[0]["id"]
        == (agent["id"])
    )
    assert client.get(f"/agents/{agent['id']}").json()["name"] == "Kit"
    # An API path that is no page of the app answers JSON even to a browser.
    blocks = client.get(f"/agents/{agent['id']}/memory/blocks", headers=HTML)
    assert blocks.headers["content-type"].startswith("application/json")
    assert client.get("/health", headers=HTML).json()["status"] == "ok"
    assert "swagger" in client.get("/docs", headers=HTML).text.lower()


def test_every_page_of_the_app_is_the_app_for_a_browser(client: TestClient) -> None:
    """The paths come from web/src/pages.json, the file the app's router reads."""
    pages = json.loads(PAGES_FILE.read_text())
    assert {"inspector", "conversation", "settings"} <= pages.keys()
    for pattern in pages.values():
        path = "/".join("x1" if part.startswith(":") else part for part in pattern.split("/"))
        for each in (path, path + "/"):
            page = client.get(each, headers=HTML)
            assert page.status_code == 200, each
            assert 'id="spa"' in page.text, each


def test_page_paths_follow_the_apps_patterns(tmp_path: Path) -> None:
    file = tmp_path / "pages.json"
    file.write_text(json.dumps({"a": "/agents/:id/chat/:conversation", "b": "/a.b"}))
    pages = page_paths(file)
    assert pages.fullmatch("/agents/1/chat/2")
    assert pages.fullmatch("/agents/1/chat/2/")
    assert not pages.fullmatch("/agents/1/chat")
    assert not pages.fullmatch("/agents/1/2/chat/3")
    assert not pages.fullmatch("/agents//chat/3")
    assert pages.fullmatch("/a.b")
    assert not pages.fullmatch("/aXb")  # a literal, not a regex
    # Without the file (the API installed without web/), no path is a page.
    nothing = page_paths(tmp_path / "missing.json")
    assert not nothing.fullmatch("/agents")
    assert not nothing.fullmatch("/")


def test_what_the_app_serves_is_counted_under_its_own_route(client: TestClient) -> None:
    before = scrape(client)
    client.get("/", headers=HTML)
    client.get("/agents/x1/chat", headers=HTML)
    client.get("/assets/index-AbC123.js")
    client.get("/assets/missing.js")
    client.get("/agents", headers={"accept": "application/json"})
    after = scrape(client)
    requests = "agent_memory_http_requests_total"
    assert grew(before, after, requests, method="GET", route="/{webapp}", status="200") == 3
    # A file not there is the API's 404; the API's own answers keep their routes.
    assert grew(before, after, requests, method="GET", route="unmatched", status="404") == 1
    assert grew(before, after, requests, method="GET", route="/agents", status="200") == 1


def test_unknown_paths_serve_the_app_to_browsers_only(client: TestClient) -> None:
    assert 'id="spa"' in client.get("/settings", headers=HTML).text
    assert 'id="spa"' in client.get("/some/deep/link", headers=HTML).text
    missing = client.get("/some/deep/link")
    assert missing.status_code == 404
    assert missing.json()["code"] == "not_found"
    # Other methods are never the app's.
    assert client.post("/some/deep/link", headers=HTML).status_code == 404


def test_hashed_files_are_cached_for_a_year_and_nothing_else_is_served(
    client: TestClient,
) -> None:
    asset = client.get("/assets/index-AbC123.js")
    assert asset.status_code == 200
    assert asset.text == "console.log('app')"
    assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert asset.headers["content-type"].startswith("text/javascript")
    for path in ("/assets/missing.js", "/assets/../../secret.txt", "/assets/%2e%2e/secret.txt"):
        refused = client.get(path)
        assert refused.status_code == 404, path
        assert "outside the app" not in refused.text


def test_assets_go_as_the_builds_compressed_copy_the_browser_takes(
    client: TestClient, dist: Path
) -> None:
    script = "console.log('app');" * 200
    assets = dist / "assets"
    (assets / "index-AbC123.js").write_text(script)
    (assets / "index-AbC123.js.gz").write_bytes(gzip.compress(script.encode()))
    (assets / "index-AbC123.js.br").write_bytes(b"brotli bytes, as the build wrote them")

    with client.stream(
        "GET", "/assets/index-AbC123.js", headers={"accept-encoding": "gzip, deflate, br"}
    ) as best:
        assert best.headers["content-encoding"] == "br"
        assert b"".join(best.iter_raw()) == b"brotli bytes, as the build wrote them"
    assert best.headers["content-type"].startswith("text/javascript")
    assert best.headers["vary"] == "accept-encoding"
    assert best.headers["cache-control"] == "public, max-age=31536000, immutable"

    gzipped = client.get("/assets/index-AbC123.js", headers={"accept-encoding": "gzip"})
    assert gzipped.headers["content-encoding"] == "gzip"
    assert int(gzipped.headers["content-length"]) < len(script) / 10
    assert gzipped.text == script  # decoded by the client
    plain = client.get("/assets/index-AbC123.js", headers={"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert plain.text == script
    # A copy without its asset's name is not an asset of its own.
    assert client.get("/assets/index-AbC123.js.gz").status_code == 404
    (assets / "index-AbC123.js.br").unlink()
    assert (
        client.get("/assets/index-AbC123.js", headers={"accept-encoding": "br, gzip"}).headers[
            "content-encoding"
        ]
        == "gzip"
    )


def test_the_local_mode_guard_still_covers_the_app(client: TestClient) -> None:
    rebound = client.get("/", headers={**HTML, "host": "attacker.example"})
    assert rebound.status_code == 403
    assert rebound.json()["code"] == "host_rejected"


def test_an_app_never_built_says_how_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with client_for(tmp_path, tmp_path / "no-dist", monkeypatch) as client:
        for path in ("/", "/agents"):
            answer = client.get(path, headers=HTML)
            assert answer.status_code == 503
            assert answer.json()["code"] == "web_app_not_built"
            assert "./dev serve" in answer.json()["message"]
            assert "npm run build" in answer.json()["message"]
        assert client.get("/assets/index-AbC123.js").status_code == 404
        assert client.get("/agents").json() == []  # the API works without the app


def test_the_page_tells_the_app_the_auth_mode(dist: Path) -> None:
    with TestClient(WebApp(Starlette(), dist=dist, auth_mode="google")) as client:
        assert '<meta name="auth-mode" content="google">' in client.get("/").text
