"""The web app in headless Chromium against a real server in local mode with the offline
model: create an agent from the backend's form, chat and see the tool calls and the streamed
answer, delete the agent; screenshots of the main pages at 1440 px and 360 px."""

import re
import uuid
from collections.abc import Iterator

import httpx2
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect

from tests.fakes.llm_servers import FakeLLM, Reply, start_fake_openai
from tests.web.conftest import shoot

WIDTHS = {"wide": 1440, "narrow": 360}


@pytest.fixture
def problems() -> list[str]:
    """Script errors and console errors of the page: none unless a test expects them."""
    return []


@pytest.fixture
def page(browser: Browser, server: str, problems: list[str]) -> Iterator[Page]:
    context = browser.new_context(base_url=server, viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

    def console(message: ConsoleMessage) -> None:
        # Chromium logs each failed request here too, without its address: those are
        # recorded from the responses below.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            problems.append(f"console: {message.text}")

    page.on("console", console)
    page.on(
        "response",
        lambda r: (
            problems.append(f"{r.status} {r.request.method} {r.url}") if r.status >= 400 else None
        ),
    )
    yield page
    context.close()
    assert not problems, problems


def both_widths(page: Page, name: str) -> None:
    for width in WIDTHS.values():
        page.set_viewport_size({"width": width, "height": 900})
        shoot(page, name)
    page.set_viewport_size({"width": 1440, "height": 900})


def test_create_chat_and_delete_an_agent(page: Page, server: str) -> None:
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/agents$"))
    expect(page.get_by_role("heading", name="Your agents")).to_be_visible()
    page.get_by_role("link", name="New agent").click()

    # The form is the backend's: its fields, labels and help text come from /agents/schema.
    expect(page.get_by_label("Name")).to_be_visible()
    expect(page.get_by_label("Architecture")).to_have_value("0")
    expect(
        page.get_by_text("Who the agent is; it starts its persona memory block.")
    ).to_be_visible()
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_text("Name is required.")).to_be_visible()
    expect(page.get_by_label("Name")).to_be_focused()
    page.get_by_label("Name").fill("Browser Kit")
    page.get_by_label("Persona").fill("Warm and brief.")
    page.get_by_label("Metadata").fill("not json")
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_text(re.compile("Metadata is not valid JSON"))).to_be_visible()
    page.get_by_label("Metadata").fill('{"team": "web"}')
    both_widths(page, "agent-form")
    page.get_by_role("button", name="Create agent").click()

    # Created as the form said, then straight to its chat.
    expect(page.get_by_role("heading", name="Browser Kit")).to_be_visible()
    agents = httpx2.get(f"{server}/agents").json()
    assert [(a["name"], a["persona"], a["metadata"]) for a in agents] == [
        ("Browser Kit", "Warm and brief.", {"team": "web"})
    ]

    prompt = page.get_by_label("Message", exact=True)
    prompt.fill("My name is Alice and I work at Google")
    prompt.press("Enter")
    log = page.get_by_role("region", name="Messages")
    calls = log.locator(".tool")
    expect(calls).to_have_count(2)
    expect(calls.nth(0)).to_contain_text("core_memory_append")
    expect(calls.nth(0).locator(".tool-args")).to_contain_text('"content": "Name: Alice"')
    expect(calls.nth(0).locator(".tool-result")).to_contain_text("Appended to [human]")
    expect(calls.nth(1).locator(".tool-args")).to_contain_text("Works at: Google")
    expect(log).to_contain_text("Nice to meet you, Alice!")
    expect(page.get_by_role("button", name="Stop")).to_have_count(0)  # the turn has ended
    # What the page shows at the end is what the server stored.
    expect(page).to_have_url(re.compile(r"/agents/[^/]+/chat/[^/]+$"))
    expect(page.get_by_role("link", name=re.compile("^My name is Alice"))).to_have_count(1)
    expect(log.locator(".msg")).to_have_count(2)
    both_widths(page, "chat")

    # A second turn; the page reloaded from the server still shows every message in order.
    prompt.fill("What is my name?")
    prompt.press("Enter")
    expect(log.locator(".msg")).to_have_count(4)  # at once: the live turn, not yet sent
    # Reloaded only once the turn has ended: earlier, the reload could leave before the
    # server had the prompt (as on a busy machine), and there would be nothing to show.
    expect(page.get_by_role("button", name="Stop")).to_have_count(0)
    page.reload()
    expect(log.locator(".msg")).to_have_count(4)
    expect(log.locator(".msg").first).to_contain_text("My name is Alice")

    # Edit: the same form, filled with the stored values.
    page.get_by_role("link", name="Agents", exact=True).click()
    page.get_by_role("link", name="Edit Browser Kit").click()
    expect(page.get_by_label("Persona")).to_have_value("Warm and brief.")
    expect(page.get_by_label("Metadata")).to_have_value('{\n  "team": "web"\n}')
    page.get_by_label("Persona").fill("Curious.")
    # Emptied, the metadata is {}: PATCH refuses null, which POST takes for "none".
    page.get_by_label("Metadata").fill("")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Your agents")).to_be_visible()
    edited = httpx2.get(f"{server}/agents").json()[0]
    assert (edited["persona"], edited["metadata"]) == ("Curious.", {})
    both_widths(page, "agents")
    page.get_by_role("button", name="Delete Browser Kit").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("core memory blocks")
    expect(dialog).to_contain_text("archival memories")
    expect(dialog).to_contain_text("conversations with their messages")
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    both_widths(page, "delete-dialog")
    dialog.get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("dialog")).to_have_count(0)
    assert len(httpx2.get(f"{server}/agents").json()) == 1
    expect(page.get_by_role("button", name="Delete Browser Kit")).to_be_focused()

    # The keyboard: Tab goes through the page in reading order, from the skip link on.
    page.reload()
    expect(page.get_by_role("heading", name="Your agents")).to_be_visible()
    focused = "(e => e.getAttribute('aria-label') || e.textContent)(document.activeElement)"
    order = []
    for _ in range(10):
        page.keyboard.press("Tab")
        order.append(page.evaluate(focused))
    assert order == [
        "Skip to content",
        "Agent memory",
        "Agents",
        "Providers",
        "New agent",
        "Chat with Browser Kit",
        "Memory of Browser Kit",
        "Edit Browser Kit",
        "Export Browser Kit",
        "Delete Browser Kit",
    ]
    # Enter opens the dialog, Escape closes it: nothing deleted, the focus back where it was.
    page.keyboard.press("Enter")
    expect(page.get_by_role("dialog").get_by_role("button", name="Cancel")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(page.get_by_role("button", name="Delete Browser Kit")).to_be_focused()
    assert len(httpx2.get(f"{server}/agents").json()) == 1

    page.get_by_role("button", name="Delete Browser Kit").click()
    page.get_by_role("dialog").get_by_role("button", name=re.compile("Delete agent")).click()
    expect(page.get_by_text("No agents yet.")).to_be_visible()
    assert httpx2.get(f"{server}/agents").json() == []


def test_errors_reach_the_person(page: Page, problems: list[str]) -> None:
    # The page asks for the agent and its conversations at once; the alert shows at the
    # first 404, so both answers are awaited before the expected failures are cleared.
    with (
        page.expect_response(lambda r: r.url.endswith("/agents/no-such-agent")),
        page.expect_response(lambda r: "/conversations?agent_id=no-such-agent" in r.url),
    ):
        page.goto("/agents/no-such-agent/chat")
    # Said in words, with the one way on: no links into an agent that is not there.
    expect(page.get_by_role("heading", name="No such agent")).to_be_visible()
    main = page.get_by_role("main")
    expect(main.get_by_role("link")).to_have_count(1)
    expect(main.get_by_role("link")).to_have_text("Go to your agents")
    expect(main).not_to_contain_text("agent_not_found")
    for path in ("/agents/no-such-agent", "/agents/no-such-agent/edit"):
        page.goto(path)
        expect(page.get_by_role("heading", name="No such agent")).to_be_visible()
        expect(main.get_by_role("link")).to_have_count(1)
    assert problems
    assert all(p.startswith("404 GET") and "no-such-agent" in p for p in problems), problems
    problems.clear()
    page.goto("/no/such/page")
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()


@pytest.fixture
def slow_agent(server: str) -> Iterator[tuple[str, FakeLLM]]:
    """An agent on a fake OpenAI (the real wire format, on 127.0.0.1) whose replies a test
    scripts: one that stalls mid-answer, one that breaks off."""
    with start_fake_openai() as fake:
        saved = httpx2.put(
            f"{server}/settings/providers/openai",
            json={"api_key": "sk-browser-test-123456", "base_url": fake.base_url},
        )
        assert saved.status_code == 200, saved.text
        created = httpx2.post(
            f"{server}/agents",
            json={
                "name": f"Slow {uuid.uuid4().hex[:6]}",
                "provider": "openai",
                "model": fake.models[0],
            },
        )
        assert created.status_code == 201, created.text
        yield created.json()["id"], fake


def test_stop_ends_the_stream_and_the_partial_reply_is_kept(
    page: Page, server: str, slow_agent: tuple[str, FakeLLM]
) -> None:
    agent_id, fake = slow_agent
    fake.replies.append(Reply(text="Once upon a time there was a", stall_after_chunks=4))
    page.goto(f"/agents/{agent_id}/chat")
    prompt = page.get_by_label("Message", exact=True)
    prompt.fill("Tell me a long story")
    prompt.press("Enter")
    log = page.get_by_role("region", name="Messages")
    expect(log).to_contain_text("Once upon")
    page.get_by_role("button", name="Stop").click()
    expect(
        page.get_by_text("Stopped: the partial reply is kept, marked interrupted.")
    ).to_be_visible()
    # Then the page shows the server's history: the partial answer, stored as interrupted.
    expect(log.locator(".live")).to_have_count(0)
    expect(log.locator(".msg.assistant .badge")).to_have_text("interrupted")
    expect(log.locator(".msg.assistant")).to_contain_text("Once upon")
    conversation = page.url.rsplit("/", 1)[-1]
    stored = httpx2.get(f"{server}/conversations/{conversation}/messages").json()["messages"]
    assert [(m["role"], m["interrupted"]) for m in stored] == [
        ("user", False),
        ("assistant", True),
    ]
    assert stored[1]["content"].startswith("Once upon")


def test_a_provider_failing_mid_answer_is_shown_as_an_error(
    page: Page, slow_agent: tuple[str, FakeLLM]
) -> None:
    agent_id, fake = slow_agent
    fake.replies.extend([Reply(text="Half of an answer that breaks", drop_after_chunks=3)] * 4)
    page.goto(f"/agents/{agent_id}/chat")
    prompt = page.get_by_label("Message", exact=True)
    prompt.fill("Answer me")
    prompt.press("Enter")
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page.get_by_role("alert")).not_to_contain_text("provider_")  # words, not codes
    # The partial answer the server kept is shown, marked interrupted.
    log = page.get_by_role("region", name="Messages")
    expect(log.locator(".live")).to_have_count(0)
    expect(log.locator(".msg.assistant .badge")).to_have_text("interrupted")
    shoot(page, "chat-error")


def test_earlier_messages_are_paged(page: Page, server: str) -> None:
    agent = httpx2.post(f"{server}/agents", json={"name": f"Pager {uuid.uuid4().hex[:6]}"}).json()
    conversation = httpx2.post(f"{server}/conversations", json={"agent_id": agent["id"]}).json()
    path = f"{server}/conversations/{conversation['id']}/messages"
    for i in range(16):  # 32 messages: more than the page's 30
        turn = httpx2.post(path, json={"content": f"Hello number {i}", "stream": False}, timeout=30)
        assert turn.status_code == 200, turn.text
    newer = httpx2.post(f"{server}/conversations", json={"agent_id": agent["id"]}).json()
    page.goto(f"/agents/{agent['id']}/chat/{conversation['id']}")
    # The agent's conversations, newest first; the one open is marked.
    listed = page.locator("ul.conversations a")
    expect(listed).to_have_count(2)
    expect(listed.nth(0)).to_have_attribute("href", f"/agents/{agent['id']}/chat/{newer['id']}")
    expect(listed.nth(1)).to_have_attribute("aria-current", "true")
    log = page.get_by_role("region", name="Messages")
    expect(log.locator(".msg").last).to_contain_text("I am the offline demo model")
    expect(log.locator(".msg.user").last).to_have_text(re.compile("Hello number 15$"))
    expect(log.locator(".msg.user")).to_have_count(15)  # the latest 30 messages
    expect(log.locator(".msg.user").first).to_have_text(re.compile("Hello number 1$"))
    page.get_by_role("button", name="Load earlier messages").click()
    expect(log.locator(".msg.user")).to_have_count(16)
    expect(log.locator(".msg").first).to_contain_text("Hello number 0")
    expect(page.get_by_role("button", name="Load earlier messages")).to_have_count(0)


def test_api_keys_in_local_mode_say_why_there_are_none(page: Page) -> None:
    # No request for keys is made (a 404 from it would be recorded as a problem).
    page.goto("/api-keys")
    expect(page.get_by_role("heading", name="API keys")).to_be_visible()
    expect(page.get_by_text("This server runs in local mode")).to_be_visible()
    expect(page.get_by_role("textbox")).to_have_count(0)
    expect(page.get_by_role("alert")).to_have_count(0)


def test_a_refused_key_says_where_to_fix_it_and_keeps_the_message(
    page: Page, slow_agent: tuple[str, FakeLLM]
) -> None:
    agent_id, fake = slow_agent
    fake.replies.append(Reply(status=401, error_message="Incorrect API key provided"))
    page.goto(f"/agents/{agent_id}/chat")
    prompt = page.get_by_label("Message", exact=True)
    prompt.fill("Are you there?")
    prompt.press("Enter")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Check the provider's key in Providers.")
    expect(alert).not_to_contain_text("provider_auth_failed")
    expect(prompt).to_have_value("Are you there?")  # kept, to send again once fixed
    alert.get_by_role("link", name="Providers").click()
    expect(page).to_have_url(re.compile(r"/settings$"))
