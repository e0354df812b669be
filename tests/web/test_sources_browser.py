"""What a reply used, in Chromium against a real server with the offline model: asked about
a topic, the model searches archival memory and answers from what it found; under the reply
the page says "Used 1 memory", whose link opens the inspector at that memory, marked and
focused, by mouse or by keyboard alone; a reply read back later says it too."""

import uuid
from collections.abc import Iterator

import httpx2
import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import shoot

COFFEE = "Drinks dark roast coffee every morning"


MADE: list[str] = []


@pytest.fixture(autouse=True)
def agents_deleted(server: str) -> Iterator[None]:
    """The agents a test made, deleted after it: the server is the whole session's, and
    other files' tests count the agents they find there."""
    yield
    while MADE:
        httpx2.delete(f"{server}/agents/{MADE.pop()}")


def new_agent(server: str) -> str:
    made = httpx2.post(f"{server}/agents", json={"name": f"Barista {uuid.uuid4().hex[:6]}"})
    assert made.status_code == 201, made.text
    agent_id: str = made.json()["id"]
    MADE.append(agent_id)
    return agent_id


def remember(server: str, agent_id: str, content: str) -> str:
    made = httpx2.post(f"{server}/agents/{agent_id}/memory/archival", json={"content": content})
    assert made.status_code == 201, made.text
    memory_id: str = made.json()["id"]
    return memory_id


def ask_about_coffee(page: Page, agent_id: str) -> None:
    page.goto(f"/agents/{agent_id}/chat")
    composer = page.get_by_label("Message", exact=True)
    composer.fill("What do you remember about coffee?")
    composer.press("Enter")
    reply = page.locator(".msg.assistant").last
    expect(reply).to_contain_text(f"From my archival memory: {COFFEE}", timeout=20_000)
    expect(page.get_by_role("button", name="Stop")).to_have_count(0, timeout=20_000)
    # The page reads the new conversation and what its replies used once the turn ends,
    # and draws them again: what a test opens before that closes with the redraw.
    page.wait_for_load_state("networkidle")


def test_used_one_memory_links_to_it_in_the_inspector(page: Page, server: str) -> None:
    agent_id = new_agent(server)
    memory_id = remember(server, agent_id, COFFEE)
    remember(server, agent_id, "Flew to Rome in May")

    ask_about_coffee(page, agent_id)

    reply = page.locator(".msg.assistant").last
    used = reply.locator("details.sources")
    expect(used.locator("summary")).to_have_text("Used 1 memory")
    link = used.get_by_role("link", name=COFFEE)
    expect(link).to_be_hidden()  # behind the disclosure
    used.locator("summary").click()
    expect(used).to_contain_text("memory · searched · score")
    blocks = "Core memory in the prompt: human (version 1), persona (version 1)"
    expect(used).to_contain_text(blocks)
    shoot(page, "chat-used-memories")

    link.click()
    page.wait_for_url(f"**/agents/{agent_id}#archival-{memory_id}")
    target = page.locator(f"#archival-{memory_id}")
    expect(target).to_contain_text(COFFEE)
    expect(target).to_have_class("memory linked")
    expect(target).to_be_focused()
    expect(target).to_be_in_viewport()
    # The other memory is listed, not marked.
    expect(page.locator("li.memory.linked")).to_have_count(1)
    shoot(page, "inspector-linked-memory")

    # Read back later (the stored reply names its run), the reply says it again; on a
    # phone too, within its width.
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"/agents/{agent_id}/chat")
    again = page.locator(".msg.assistant").last.locator("details.sources")
    expect(again.locator("summary")).to_have_text("Used 1 memory")
    again.locator("summary").click()
    expect(again.get_by_role("link", name=COFFEE)).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shoot(page, "chat-used-memories")


def test_by_keyboard_alone(page: Page, server: str) -> None:
    agent_id = new_agent(server)
    memory_id = remember(server, agent_id, COFFEE)
    ask_about_coffee(page, agent_id)

    summary = page.locator(".msg.assistant").last.locator("details.sources summary")
    summary.focus()
    page.keyboard.press("Enter")  # opens the disclosure
    link = page.locator(".msg.assistant").last.get_by_role("link", name=COFFEE)
    expect(link).to_be_visible()
    page.keyboard.press("Tab")
    expect(link).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/agents/{agent_id}#archival-{memory_id}")
    expect(page.locator(f"#archival-{memory_id}")).to_be_focused()


def test_a_memory_older_than_the_first_page_is_read_on_its_own(page: Page, server: str) -> None:
    agent_id = new_agent(server)
    memory_id = remember(server, agent_id, COFFEE)
    for i in range(22):  # newer than it: the inspector lists the newest 20
        remember(server, agent_id, f"Note number {i} about the garden")

    ask_about_coffee(page, agent_id)
    used = page.locator(".msg.assistant").last.locator("details.sources")
    used.locator("summary").click()
    used.get_by_role("link", name=COFFEE).click()

    linked = page.get_by_role("list", name="Linked memory")
    expect(linked).to_contain_text(COFFEE)
    expect(page.locator(f"#archival-{memory_id}")).to_be_focused()
    expect(page.locator(f"#archival-{memory_id}")).to_have_count(1)
    expect(page.get_by_role("list", name="Archival memories")).not_to_contain_text(COFFEE)


def test_a_link_to_a_deleted_memory_says_so(page: Page, server: str) -> None:
    agent_id = new_agent(server)
    memory_id = remember(server, agent_id, COFFEE)
    gone = httpx2.delete(f"{server}/agents/{agent_id}/memory/archival/{memory_id}")
    assert gone.status_code == 204, gone.text

    page.goto(f"/agents/{agent_id}#archival-{memory_id}")

    expect(page.get_by_role("alert")).to_have_text(
        "The memory this link names is no longer in archival memory: it was deleted."
    )


def test_past_messages_link_to_their_place_in_the_conversation(page: Page, server: str) -> None:
    agent_id = new_agent(server)
    remember(server, agent_id, COFFEE)
    page.goto(f"/agents/{agent_id}/chat")
    composer = page.get_by_label("Message", exact=True)
    composer.fill("Hello")
    composer.press("Enter")
    expect(page.locator(".msg.assistant").last).to_contain_text("Hello! I am the offline demo")
    expect(page.get_by_role("button", name="Stop")).to_have_count(0, timeout=20_000)
    # A greeting uses nothing: nothing is said under it.
    expect(page.locator(".msg.assistant").last.locator("details.sources")).to_have_count(0)

    composer.fill("What do you remember about coffee?")
    composer.press("Enter")
    expect(page.locator(".msg.assistant").last).to_contain_text(COFFEE, timeout=20_000)
    expect(page.get_by_role("button", name="Stop")).to_have_count(0, timeout=20_000)

    used = page.locator(".msg.assistant").last.locator("details.sources")
    expect(used.locator("summary")).to_have_text("Used 1 memory · 2 past messages")
    used.locator("summary").click()
    expect(used).to_contain_text("past message · recent conversation")
    used.get_by_role("link", name="Hello", exact=True).click()
    said = page.locator(".msg.user").first
    expect(said).to_contain_text("Hello")
    assert page.url.split("#")[1] == said.get_attribute("id")
    assert said.evaluate("el => el.matches(':target')")
