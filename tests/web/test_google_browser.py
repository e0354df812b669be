"""Sign-in in AUTH_MODE=google, in headless Chromium against a real server process and the
fake Google (tests/fakes/oidc.py): the sign-in page, Google's redirect and back, API keys
(created and shown once, used, revoked), a silent refresh once the access token has expired
(tokens that live for seconds: tests/web/short_tokens.py), and logging out."""

import re
import time
from collections.abc import Iterator

import httpx2
import pytest
from playwright.sync_api import Page, Request, expect

from tests.fakes.oidc import FakeGoogle, start_fake_google
from tests.web.conftest import shoot
from tests.web.servers import serving

# Short enough not to wait long, long enough that a page's calls seldom need a refresh (when
# they do, the app refreshes and retries, which is what it must do anyway).
TOKEN_SECONDS = 5


@pytest.fixture(scope="module")
def google() -> Iterator[FakeGoogle]:
    with start_fake_google() as google:
        yield google


@pytest.fixture(scope="module")
def server(built_app: object, google: FakeGoogle) -> Iterator[str]:
    env = {
        "AUTH_MODE": "google",
        "PUBLIC_URL": "{root}",
        "JWT_SECRET": "j" * 40,
        "GOOGLE_CLIENT_ID": google.client_id,
        "GOOGLE_CLIENT_SECRET": google.client_secret,
        "GOOGLE_DISCOVERY_URL": google.discovery_url,
        # The page's own origin: the refresh cookie is SameSite=Strict and /auth/refresh
        # answers only it. Chromium keeps Secure cookies on http://localhost.
        "FRONTEND_URL": "{root}",
        "MEMORY_EMBEDDING_BACKEND": "none",
    }
    with serving(env, host="localhost", access_token_seconds=TOKEN_SECONDS) as root:
        yield root


def test_sign_in_keys_refresh_and_log_out(page: Page, server: str) -> None:
    sent: list[str] = []
    answered: list[tuple[str, int]] = []
    page.on("request", lambda r: sent.append(f"{r.method} {r.url.removeprefix(server)}"))
    page.on("response", lambda r: answered.append((r.url.removeprefix(server), r.status)))

    # Not signed in: the app asks for it and shows nothing else.
    page.goto("/agents")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main")).to_have_count(0)
    for width in (1440, 360):
        page.set_viewport_size({"width": width, "height": 900})
        shoot(page, "sign-in")
    page.set_viewport_size({"width": 1440, "height": 900})

    # Through the fake Google and back to the page asked for, signed in.
    with page.expect_response(lambda r: r.url.endswith("/auth/refresh") and r.ok) as first:
        page.get_by_role("link", name="Sign in with Google").click()
    assert first.value.json()["expires_in"] == TOKEN_SECONDS
    expect(page).to_have_url(f"{server}/agents")
    expect(page.get_by_role("heading", name="Your agents")).to_be_visible()
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("button", name="Log out")).to_be_visible()
    assert any(s.startswith("GET /auth/google/callback") for s in sent)
    # The access token lives in memory only: nothing in storage, the cookie HttpOnly.
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["am_refresh"]["httpOnly"]
    assert cookies["am_refresh"]["path"] == "/auth"

    # API keys: created and shown once, used by a script, revoked.
    nav.get_by_role("link", name="API keys").click()
    expect(page.get_by_text("No API keys.")).to_be_visible()
    long_name = "K" * 100  # the longest name a key takes, with nowhere to break
    page.get_by_label("Name of a new key").fill(long_name)
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_role("list", name="API keys")).to_contain_text(long_name)
    for width in (390, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        wider = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert wider == 0, f"the API keys page at {width} px is {wider} px too wide"
    page.get_by_role("button", name=f"Revoke {long_name}").click()
    page.get_by_role("button", name="Revoke", exact=True).click()
    expect(page.get_by_text("No API keys.")).to_be_visible()
    page.get_by_label("Name of a new key").fill("n8n")
    page.get_by_role("button", name="Create key").click()
    key = page.get_by_label("The new API key", exact=True).inner_text().strip()
    assert key.startswith("amk_")
    keys = page.get_by_role("list", name="API keys").get_by_role("listitem")
    expect(keys).to_have_count(1)
    expect(keys.first).to_contain_text("n8n")
    expect(keys.first).to_contain_text(key[:12])
    expect(keys.first).to_contain_text("never used")
    for width in (1440, 360):
        page.set_viewport_size({"width": width, "height": 900})
        shoot(page, "api-keys")
    page.set_viewport_size({"width": 1440, "height": 900})
    as_script = {"Authorization": f"Bearer {key}"}
    assert httpx2.get(f"{server}/agents", headers=as_script).status_code == 200
    # Shown once: back on the page, the list has it, the secret is gone for good.
    nav.get_by_role("link", name="Agents", exact=True).click()
    nav.get_by_role("link", name="API keys").click()
    expect(keys).to_have_count(1)
    assert key not in page.content()
    keys.first.get_by_role("button", name="Revoke n8n").click()
    page.get_by_role("button", name="Revoke", exact=True).click()
    expect(page.get_by_text("No API keys.")).to_be_visible()
    revoked = httpx2.get(f"{server}/agents", headers=as_script)
    assert (revoked.status_code, revoked.json()["code"]) == (401, "invalid_api_key")

    # Past the access token's life, the next call is refused, refreshed, and retried. The
    # token in the page may be a refreshed one, so the wait counts from the page's last call.
    time.sleep(TOKEN_SECONDS + 1)
    answered.clear()

    def refreshed(request: Request) -> bool:
        return request.url.endswith("/auth/refresh") and request.method == "POST"

    with page.expect_request(refreshed):
        nav.get_by_role("link", name="Providers").click()
    expect(page.get_by_role("heading", name="LLM providers")).to_be_visible()
    expect(page.get_by_role("article", name="Anthropic")).to_be_visible()
    expect(page.get_by_role("heading", name="Sign in")).to_have_count(0)
    statuses = [status for url, status in answered if not url.startswith("/assets/")]
    assert 401 in statuses, answered
    assert statuses[-1] == 200, answered
    assert ("/auth/refresh", 200) in answered

    # Log out: back to sign-in, and the session is over even after a reload.
    with page.expect_response(lambda r: r.url.endswith("/auth/logout")) as out:
        nav.get_by_role("button", name="Log out").click()
    assert out.value.status == 204
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert "am_refresh" not in {c["name"] for c in page.context.cookies()}


def test_a_failed_sign_in_says_why(page: Page, server: str, google: FakeGoogle) -> None:
    google.user = {**google.user, "email_verified": False}
    try:
        page.goto("/agents")
        page.get_by_role("link", name="Sign in with Google").click()
        expect(page.get_by_role("alert")).to_contain_text("email address is not verified")
        expect(page.get_by_role("link", name="Sign in with Google")).to_be_visible()
        expect(page).to_have_url(re.compile(r"auth_error=email_not_verified"))
    finally:
        google.user = {**google.user, "email_verified": True}
