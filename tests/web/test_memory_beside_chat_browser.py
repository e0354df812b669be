"""Memory beside the chat, in Chromium against a real server: the core memory panel follows a
turn while it streams, a reply carries chips that jump to the lines it saved, and each tool
call reads as one line with its arguments and raw result behind a disclosure."""

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
def server(built_app: object) -> Iterator[str]:
    """A server of this module's own: its tests configure the one user's OpenAI."""
    with serving({"AUTH_MODE": "local", "MEMORY_EMBEDDING_BACKEND": "none"}) as root:
        yield root


@pytest.fixture
def agent_on_fake(server: str) -> Iterator[tuple[str, FakeLLM]]:
    with start_fake_openai() as fake:
        saved = httpx2.put(
            f"{server}/settings/providers/openai",
            json={"api_key": "sk-browser-test-123456", "base_url": fake.base_url},
        )
        assert saved.status_code == 200, saved.text
        made = httpx2.post(
            f"{server}/agents",
            json={
                "name": f"Rememberer {uuid.uuid4().hex[:6]}",
                "provider": "openai",
                "model": fake.models[0],
            },
        )
        assert made.status_code == 201, made.text
        yield made.json()["id"], fake


def test_the_panel_follows_the_turn_and_chips_jump_to_the_line(
    page: Page, agent_on_fake: tuple[str, FakeLLM]
) -> None:
    agent_id, fake = agent_on_fake
    saves = [
        ToolCallScript("core_memory_append", json.dumps({"block": "human", "content": line}))
        for line in ("Name: Alice", "Lives in: Lisbon")
    ]
    fake.replies.extend(
        [
            Reply(tool_calls=saves),
            # The answer takes its time: the panel must show the lines before it ends.
            Reply(text="Nice to meet you, Alice from Lisbon! " * 2, chunk_delay_seconds=0.3),
        ]
    )
    page.goto(f"/agents/{agent_id}/chat")
    panel = page.get_by_role("complementary", name="Core memory")
    human = panel.get_by_role("region", name="Block human")
    expect(human).to_be_visible()
    expect(human).not_to_contain_text("Lives in: Lisbon")

    composer = page.get_by_label("Message", exact=True)
    composer.fill("I am Alice and I live in Lisbon")
    composer.press("Enter")
    expect(human).to_contain_text("Lives in: Lisbon")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()  # still answering
    expect(page.get_by_role("button", name="Stop")).to_have_count(0, timeout=20_000)

    reply = page.locator(".msg.assistant").last
    # Each tool call is one readable line; what it was given and answered is behind it.
    call = reply.locator("details.tool").nth(1)
    expect(call.locator("summary")).to_have_text("Saved to memory · human: Lives in: Lisbon")
    expect(call.locator(".tool-args")).to_be_hidden()
    call.locator("summary").click()
    expect(call.locator(".tool-args")).to_contain_text('"content": "Lives in: Lisbon"')
    expect(call.locator(".tool-result")).to_contain_text("Appended to [human] at line 2")

    chips = reply.get_by_role("list", name="Saved to memory").get_by_role("link")
    expect(chips).to_have_text(
        ["Saved to memory · human: Name: Alice", "Saved to memory · human: Lives in: Lisbon"]
    )
    chips.nth(1).click()
    line = human.get_by_role("listitem").nth(1)
    expect(line).to_have_text("Lives in: Lisbon")
    assert page.url.endswith("#memory-human-2")
    assert line.evaluate("li => li.matches(':target')")
    expect(line).to_be_in_viewport()
    shoot(page, "chat-memory-panel")


def test_the_panel_sits_below_the_chat_on_a_phone(
    page: Page, agent_on_fake: tuple[str, FakeLLM]
) -> None:
    agent_id, _ = agent_on_fake
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"/agents/{agent_id}/chat")
    panel = page.get_by_role("complementary", name="Core memory")
    expect(panel).to_be_visible()
    composer = page.get_by_label("Message", exact=True).bounding_box()
    box = panel.bounding_box()
    assert composer is not None
    assert box is not None
    assert box["y"] > composer["y"]  # after the composer, not in its way
    assert box["x"] + box["width"] <= 390
    shoot(page, "chat-memory-panel")
