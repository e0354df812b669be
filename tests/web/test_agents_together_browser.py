"""Agents together in Chromium against a real server: an orchestrator asks its specialist
(both on the fake OpenAI), the specialist's turn shows under the call that asked it, named
and indented, then the orchestrator's answer; and a specialist picked in the agent form by
keyboard is the agent's."""

import json
import uuid
from collections.abc import Iterator

import httpx2
import pytest
from playwright.sync_api import Page, expect

from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript, start_fake_openai
from tests.web.conftest import shoot
from tests.web.servers import serving


@pytest.fixture(scope="module")
def on_fake(built_app: object) -> Iterator[tuple[str, FakeLLM]]:
    """A server of this module's own, its one user's OpenAI the fake."""
    with (
        start_fake_openai() as fake,
        serving({"AUTH_MODE": "local", "MEMORY_EMBEDDING_BACKEND": "none"}) as root,
    ):
        saved = httpx2.put(
            f"{root}/settings/providers/openai",
            json={"api_key": "sk-browser-test-123456", "base_url": fake.base_url},
        )
        assert saved.status_code == 200, saved.text
        yield root, fake


@pytest.fixture(scope="module")
def server(on_fake: tuple[str, FakeLLM]) -> str:
    return on_fake[0]


def make_agent(server: str, fake: FakeLLM, name: str, **more: object) -> str:
    made = httpx2.post(
        f"{server}/agents",
        json={"name": name, "provider": "openai", "model": fake.models[0], **more},
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def test_the_specialists_turn_shows_under_the_call_that_asked_it(
    page: Page, on_fake: tuple[str, FakeLLM]
) -> None:
    server, fake = on_fake
    specialist = f"weather{uuid.uuid4().hex[:4]}"
    specialist_id = make_agent(server, fake, specialist, persona="Knows the weather.")
    boss = make_agent(server, fake, "Concierge", specialists=[specialist_id])
    ask = {"request": "Will it rain in Lisbon?"}
    fake.replies.extend(
        [
            Reply(tool_calls=[ToolCallScript(f"ask_{specialist}", json.dumps(ask))]),
            Reply(text="Dry and sunny in Lisbon all week."),  # the specialist's turn
            # The answer takes its time: the specialist's turn is on the page meanwhile.
            Reply(text="No rain: it stays dry and sunny in Lisbon. " * 2, chunk_delay_seconds=0.4),
        ]
    )
    page.goto(f"/agents/{boss}/chat")
    composer = page.get_by_label("Message", exact=True)
    composer.fill("Should I pack an umbrella for Lisbon?")
    composer.press("Enter")

    reply = page.locator(".msg.assistant.live")
    nested = reply.get_by_role("group", name=f"{specialist} answers")
    expect(nested).to_contain_text("Dry and sunny in Lisbon all week.")
    expect(nested.locator(".who")).to_have_text(specialist)
    # Right under the call that asked it, and indented from it.
    call = reply.locator("details.tool").first
    expect(call.locator("summary")).to_have_text(f"Asked {specialist}: Will it rain in Lisbon?")
    assert nested.evaluate("g => g.previousElementSibling.matches('details.tool')")
    call_box, nested_box = call.bounding_box(), nested.bounding_box()
    assert call_box is not None
    assert nested_box is not None
    assert nested_box["x"] > call_box["x"] + 10
    assert nested_box["y"] > call_box["y"]
    shoot(page, "chat-specialist")
    page.set_viewport_size({"width": 390, "height": 800})
    expect(nested).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shoot(page, "chat-specialist")

    expect(page.get_by_role("button", name="Stop")).to_have_count(0, timeout=30_000)
    answer = page.locator(".msg.assistant").last
    expect(answer).to_contain_text("No rain: it stays dry and sunny in Lisbon.")
    expect(answer.locator("details.tool summary")).to_have_text(
        f"Asked {specialist}: Will it rain in Lisbon?"
    )


def test_a_specialist_picked_by_keyboard_is_the_agents(
    page: Page, on_fake: tuple[str, FakeLLM]
) -> None:
    server, fake = on_fake
    specialist = f"Billing {uuid.uuid4().hex[:4]}"
    specialist_id = make_agent(server, fake, specialist)
    agent = make_agent(server, fake, "Front desk")

    page.goto(f"/agents/{agent}/edit")
    choice = page.get_by_role("checkbox", name=specialist)
    expect(page.get_by_role("checkbox", name="Front desk")).to_have_count(0)  # not itself
    choice.focus()
    page.keyboard.press("Space")
    expect(choice).to_be_checked()
    shoot(page, "agent-form-specialists")
    page.get_by_role("button", name="Save").focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{server}/agents")
    assert httpx2.get(f"{server}/agents/{agent}").json()["specialists"] == [specialist_id]

    page.goto(f"/agents/{agent}")
    shown = page.locator(".specialists")
    expect(shown).to_have_text(f"Asks its specialists: {specialist}")
    expect(shown.get_by_role("link", name=specialist)).to_have_attribute(
        "href", f"/agents/{specialist_id}"
    )
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"/agents/{agent}/edit")
    expect(page.get_by_role("checkbox", name=specialist)).to_be_checked()
    shoot(page, "agent-form-specialists")
