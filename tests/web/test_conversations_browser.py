"""Conversations in the chat page, in Chromium against a real server with the offline model:
made by their first message and titled by it, never empty; the agent's chat opening its
latest conversation; every turn's stream ending as finished, none cancelled."""

import re
import uuid
from collections.abc import Iterator

import httpx2
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.web.conftest import open_page


@pytest.fixture
def page(browser: Browser, server: str) -> Iterator[Page]:
    # A stream read whole ends as finished, not as cancelled (net::ERR_ABORTED).
    yield from open_page(browser, server, failed_requests=True)


@pytest.fixture
def agent(server: str) -> Iterator[str]:
    made = httpx2.post(f"{server}/agents", json={"name": f"Talker {uuid.uuid4().hex[:6]}"})
    assert made.status_code == 201, made.text
    yield made.json()["id"]
    httpx2.delete(f"{server}/agents/{made.json()['id']}")


def conversations_of(server: str, agent: str) -> list[dict[str, str]]:
    listed: list[dict[str, str]] = httpx2.get(
        f"{server}/conversations", params={"agent_id": agent}
    ).json()["conversations"]
    return listed


def send(page: Page, text: str) -> None:
    """Sends and waits for the turn's stream to end and the stored messages to be shown."""
    page.get_by_label("Message", exact=True).fill(text)
    with page.expect_event(
        "requestfinished",
        lambda r: r.method == "POST" and r.url.endswith("/messages"),
        timeout=20_000,
    ):
        page.get_by_role("button", name="Send").click()
    expect(page.locator(".live")).to_have_count(0)


def test_a_conversation_is_made_by_its_first_message_and_titled_by_it(
    page: Page, server: str, agent: str
) -> None:
    page.goto(f"/agents/{agent}/chat")
    for _ in range(3):
        page.get_by_role("button", name="New conversation").click()
    expect(page).to_have_url(re.compile(r"/chat\?new$"))
    assert conversations_of(server, agent) == []  # clicks make nothing

    send(page, "Plan my trip to Lisbon\nin May, with trains")
    expect(page).to_have_url(re.compile(rf"/agents/{agent}/chat/[^/?]+$"))
    [made] = conversations_of(server, agent)
    assert made["title"] == "Plan my trip to Lisbon"
    expect(page.get_by_role("link", name=re.compile("^Plan my trip to Lisbon"))).to_have_attribute(
        "aria-current", "true"
    )

    page.get_by_role("button", name="New conversation").click()
    expect(page.locator(".msg")).to_have_count(0)  # an empty page, for the next one
    send(page, "What should I pack?")
    titles = sorted(c["title"] for c in conversations_of(server, agent))
    assert titles == ["Plan my trip to Lisbon", "What should I pack?"]


def test_the_agents_chat_opens_its_latest_conversation(page: Page, server: str, agent: str) -> None:
    for title in ("Older", "Newer"):
        made = httpx2.post(f"{server}/conversations", json={"agent_id": agent, "title": title})
        assert made.status_code == 201, made.text
    latest = made.json()["id"]
    page.goto(f"/agents/{agent}/chat")
    expect(page).to_have_url(re.compile(rf"/agents/{agent}/chat/{latest}$"))
    expect(page.get_by_role("link", name=re.compile("^Newer"))).to_have_attribute(
        "aria-current", "true"
    )


def test_chatting_in_an_older_conversation_moves_it_to_the_top_and_the_chat_opens_it(
    page: Page, server: str, agent: str
) -> None:
    made = {}
    for title in ("Older", "Newer"):
        created = httpx2.post(f"{server}/conversations", json={"agent_id": agent, "title": title})
        assert created.status_code == 201, created.text
        made[title] = created.json()["id"]
    listed = page.get_by_role("complementary", name="Conversations").get_by_role("listitem")
    page.goto(f"/agents/{agent}/chat/{made['Older']}")
    expect(listed).to_have_count(2)
    expect(listed.first).to_contain_text("Newer")

    send(page, "My name is Ada")
    # The list, read again after the turn, has the conversation it went on in first.
    expect(listed.first).to_contain_text("Older")
    expect(listed.nth(1)).to_contain_text("Newer")
    assert [c["title"] for c in conversations_of(server, agent)] == ["Older", "Newer"]

    # The agent's chat opens the conversation last active, not the one made last.
    page.goto(f"/agents/{agent}/chat")
    expect(page).to_have_url(re.compile(rf"/agents/{agent}/chat/{made['Older']}$"))
    expect(page.get_by_role("link", name=re.compile("^Older"))).to_have_attribute(
        "aria-current", "true"
    )
    expect(page.get_by_role("region", name="Messages")).to_contain_text("My name is Ada")


def test_the_agents_list_has_the_agent_last_chatted_with_first(page: Page, server: str) -> None:
    suffix = uuid.uuid4().hex[:6]
    ids = {}
    for name in (f"First made {suffix}", f"Last made {suffix}"):
        created = httpx2.post(f"{server}/agents", json={"name": name})
        assert created.status_code == 201, created.text
        ids[name] = created.json()["id"]
    try:
        cards = page.get_by_role("list", name="Agents").get_by_role("heading")

        def order() -> list[str]:
            return [n for n in cards.all_inner_texts() if n.endswith(suffix)]

        page.goto("/agents")
        expect(cards.filter(has_text=suffix)).to_have_count(2)
        assert order() == [f"Last made {suffix}", f"First made {suffix}"]

        page.goto(f"/agents/{ids[f'First made {suffix}']}/chat")
        send(page, "Hello")
        page.wait_for_load_state("networkidle")  # the memory panel's reading, not cut short
        page.goto("/agents")
        expect(cards.filter(has_text=suffix)).to_have_count(2)
        assert order() == [f"First made {suffix}", f"Last made {suffix}"]
        used = page.get_by_role("listitem").filter(
            has=page.get_by_role("heading", name=f"First made {suffix}")
        )
        expect(used).to_contain_text("Last used")
    finally:
        for agent_id in ids.values():
            httpx2.delete(f"{server}/agents/{agent_id}")
