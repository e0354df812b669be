"""What people expect of every page, in Chromium against a real server: a tab title per page,
the focus on the new page's heading after a navigation (and left alone when a page only
corrects its address), "You" for one's own messages, and copy buttons that say they copied."""

import re
import uuid
from collections.abc import Iterator

import httpx2
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.web.conftest import open_page


@pytest.fixture
def page(browser: Browser, server: str) -> Iterator[Page]:
    yield from open_page(browser, server, permissions=["clipboard-read", "clipboard-write"])


@pytest.fixture
def agent(server: str) -> Iterator[tuple[str, str]]:
    name = f"Basics {uuid.uuid4().hex[:6]}"
    made = httpx2.post(f"{server}/agents", json={"name": name})
    assert made.status_code == 201, made.text
    yield made.json()["id"], name
    httpx2.delete(f"{server}/agents/{made.json()['id']}")


def test_each_page_has_its_title_and_a_navigation_focuses_its_heading(
    page: Page, agent: tuple[str, str]
) -> None:
    agent_id, name = agent
    page.goto("/agents")
    expect(page).to_have_title("Your agents · Agent memory")
    page.get_by_role("link", name=f"Memory of {name}").click()
    expect(page).to_have_title(f"Memory of {name} · Agent memory")
    expect(page.get_by_role("heading", level=1)).to_be_focused()
    page.get_by_role("link", name="Chat with this agent").click()
    expect(page).to_have_title(f"{name} · Agent memory")
    expect(page.get_by_role("heading", level=1)).to_be_focused()
    page.go_back()
    expect(page).to_have_title(f"Memory of {name} · Agent memory")
    expect(page.get_by_role("heading", level=1)).to_be_focused()
    page.get_by_role("link", name="Providers").click()
    expect(page).to_have_title("LLM providers · Agent memory")

    # A first message makes the conversation and the page corrects its address: the focus
    # stays in the composer, for the next message.
    page.goto(f"/agents/{agent_id}/chat")
    composer = page.get_by_label("Message", exact=True)
    composer.fill("Hello there")
    composer.press("Enter")
    expect(page).to_have_url(re.compile(rf"/agents/{agent_id}/chat/[^/?]+$"))
    expect(page.locator(".live")).to_have_count(0)
    expect(composer).to_be_focused()


def test_ones_own_messages_say_you_and_a_reply_can_be_copied(
    page: Page, agent: tuple[str, str]
) -> None:
    agent_id, _ = agent
    page.goto(f"/agents/{agent_id}/chat")
    composer = page.get_by_label("Message", exact=True)
    composer.fill("My name is Alice")
    composer.press("Enter")
    expect(page.locator(".live")).to_have_count(0)
    mine = page.locator(".msg.user .who")
    expect(mine).to_have_text("You")
    expect(page.get_by_role("region", name="Messages")).not_to_contain_text("local@localhost")

    reply = page.locator(".msg.assistant")
    reply.get_by_role("button", name="Copy the reply").click()
    expect(reply.get_by_role("status")).to_have_text("Copied.")
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert copied == reply.locator(".text").last.inner_text()
    expect(reply.get_by_role("status")).to_have_text("", timeout=5000)  # said for a while
