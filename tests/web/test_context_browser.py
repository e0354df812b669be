"""The Context window page, in headless Chromium against a real server process: reached
from the inspector, its parts' tokens add up to its total, a part opens by keyboard to
show its messages, the conversation picker changes what it shows, and nothing overflows
at 390 px."""

import re
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import overflow, shoot
from tests.web.servers import serving


@pytest.fixture(scope="module")
def server(built_app: object) -> Iterator[str]:
    with serving({"AUTH_MODE": "local"}) as root:
        yield root


def tokens(text: str) -> int:
    return int(re.sub(r"[^0-9]", "", text.split("tokens")[0]))


def parts_tokens(page: Page) -> list[int]:
    shown = page.locator(".context-part > summary .part-tokens").all_inner_texts()
    return [tokens(t) for t in shown]


def test_the_context_window_adds_up_and_opens(page: Page, server: str) -> None:
    agent: dict[str, Any] = httpx2.post(f"{server}/agents", json={"name": "Windowed"}).json()
    base = f"{server}/agents/{agent['id']}"
    long_line = "Favourite-word: " + "y" * 90  # no spaces: must wrap, not widen the page
    for line in ("Name: Alice Moreira", long_line):
        assert httpx2.post(f"{base}/memory/blocks/human/lines", json={"content": line}).is_success
    said = httpx2.post(
        f"{server}/chat",
        json={"agent_id": agent["id"], "prompt": "Hello, remember me?", "stream": False},
        timeout=60,
    )
    assert said.status_code == 200, said.text

    page.goto(f"/agents/{agent['id']}")
    link = page.get_by_role("link", name="Context window")
    link.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Context window of Windowed")).to_be_visible()
    total = page.get_by_test_id("context-total")
    expect(total).to_contain_text("of 8,192")
    parts = page.locator(".context-part")
    expect(parts).to_have_count(6)
    # The latest conversation is picked: its turn is among the recent turns.
    recent = page.locator('[data-part="recent_turns"]')
    expect(recent).to_contain_text("Recent turns (2)")
    assert sum(parts_tokens(page)) == tokens(total.inner_text()) > 0

    # By keyboard: a part's summary opens it; its messages are there, each behind its own.
    recent.locator("summary").first.focus()
    page.keyboard.press("Enter")
    expect(recent.locator(".context-items > li")).to_have_count(2)
    recent.locator(".context-items summary").first.click()
    expect(recent.locator(".context-text").first).to_have_text("user: Hello, remember me?")
    page.locator('[data-part="blocks"] > summary').click()
    page.locator('[data-part="blocks"] .context-items summary').first.click()
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert overflow(page) == 0, width
        shoot(page, "context-window")
    page.set_viewport_size({"width": 1440, "height": 900})

    # No conversation: no recent turns, and the total is still the parts' sum.
    page.get_by_label("Conversation").select_option("")
    expect(recent.locator("summary .part-tokens").first).to_have_text("0 tokens")
    assert sum(parts_tokens(page)) == tokens(total.inner_text())
