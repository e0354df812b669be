"""The memory inspector, provider settings and seed 004's dashboard_url in headless Chromium,
against a real server process in local mode (the offline model, the shipped static
embeddings so that search is hybrid): a chat turn's lines, edits with their versions, a
conflict with a write made behind the page's back, archival and message search with scores;
provider credentials saved, masked and tested against the fake OpenAI."""

import re
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.fakes.llm_servers import BAD_KEY, FakeLLM, start_fake_openai
from tests.web.conftest import open_page, shoot
from tests.web.servers import serving

WIDTHS = (1440, 360)


@pytest.fixture(scope="module")
def server(built_app: object) -> Iterator[str]:
    with serving({"AUTH_MODE": "local", "MEMORY_EMBEDDING_BACKEND": "static"}) as root:
        yield root


@pytest.fixture(scope="module")
def fake_openai() -> Iterator[FakeLLM]:
    with start_fake_openai() as fake:
        yield fake


@pytest.fixture
def expected_failures() -> list[str]:
    """Statuses a test provokes on purpose: Chromium logs every failed fetch as an error."""
    return []


@pytest.fixture
def page(browser: Browser, server: str, expected_failures: list[str]) -> Iterator[Page]:
    yield from open_page(browser, server, console_errors_but=expected_failures)


def both_widths(page: Page, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        shoot(page, name)
    page.set_viewport_size({"width": 1440, "height": 900})


def lines_of(server: str, agent_id: str, block: str) -> list[str]:
    answer = httpx2.get(f"{server}/agents/{agent_id}/memory/blocks/{block}")
    assert answer.status_code == 200, answer.text
    lines: list[str] = answer.json()["lines"]
    return lines


def card(page: Page, block: str) -> Locator:
    return page.get_by_role("article", name=block, exact=True)


def test_the_inspector_after_a_chat_turn(
    page: Page, server: str, expected_failures: list[str]
) -> None:
    agent: dict[str, Any] = httpx2.post(f"{server}/agents", json={"name": "Inspected"}).json()
    agent_id = agent["id"]
    # A turn in the chat page, then to the inspector through the agents list.
    page.goto(f"/agents/{agent_id}/chat")
    prompt = page.get_by_label("Message", exact=True)
    prompt.fill("My name is Alice and I work at Google")
    prompt.press("Enter")
    expect(page.get_by_role("region", name="Messages")).to_contain_text("Nice to meet you, Alice!")
    page.get_by_role("link", name="Agents", exact=True).click()
    page.get_by_role("link", name="Memory of Inspected").click()
    expect(page).to_have_url(re.compile(rf"/agents/{agent_id}$"))
    expect(page.get_by_role("heading", name="Memory of Inspected")).to_be_visible()

    # The lines the turn wrote, with the block's capacity and version.
    human = card(page, "human")
    lines = human.get_by_role("list", name="Lines of human").get_by_role("listitem")
    expect(lines).to_have_count(2)
    expect(lines.nth(0)).to_contain_text("Name: Alice")
    expect(lines.nth(1)).to_contain_text("Works at: Google")
    expect(human).to_contain_text("5 / 5000 words (0%)")
    version = httpx2.get(f"{server}/agents/{agent_id}/memory/blocks/human").json()["version"]
    expect(human).to_contain_text(f"version {version}")

    # Edit a line, append one, delete one: each lands, as the server says.
    human.get_by_role("button", name="Edit line 2 of human").click()
    human.get_by_label("Line 2 of human").fill("Works at: Google DeepMind")
    human.get_by_role("button", name="Save").click()
    expect(lines.nth(1)).to_contain_text("Works at: Google DeepMind")
    expect(human).to_contain_text(f"version {version + 1}")
    # Saved: the focus is back on the line's Edit button, where the keyboard left off.
    expect(human.get_by_role("button", name="Edit line 2 of human")).to_be_focused()
    # By keyboard alone: Enter opens the edit, Escape closes it unsaved, focus goes back.
    page.keyboard.press("Enter")
    expect(human.get_by_label("Line 2 of human")).to_be_focused()
    page.keyboard.type(" and more")
    page.keyboard.press("Tab")
    expect(human.get_by_role("button", name="Save")).to_be_focused()
    page.keyboard.press("Escape")
    expect(human.get_by_label("Line 2 of human", exact=True)).to_have_count(0)
    expect(human.get_by_role("button", name="Edit line 2 of human")).to_be_focused()
    expect(lines.nth(1)).to_have_text(re.compile(r"Works at: Google DeepMind\s*Edit"))
    # Tab goes on to the line's Delete; Escape leaves its question and returns to it.
    page.keyboard.press("Tab")
    expect(human.get_by_role("button", name="Delete line 2 of human")).to_be_focused()
    page.keyboard.press("Enter")
    asked = human.get_by_role("group", name="Confirm: Delete line 2 of human")
    expect(asked.get_by_role("button", name="Cancel")).to_be_focused()
    page.keyboard.press("Escape")
    expect(asked).to_have_count(0)
    expect(human.get_by_role("button", name="Delete line 2 of human")).to_be_focused()
    # The focused control is drawn with a ring (:focus-visible), not left to guess.
    ring = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert ring == "solid"
    human.get_by_label("New line for human").fill("Likes green tea")
    human.get_by_role("button", name="Append").click()
    expect(lines).to_have_count(3)
    expect(human.get_by_label("New line for human")).to_have_value("")
    assert lines_of(server, agent_id, "human") == [
        "Name: Alice",
        "Works at: Google DeepMind",
        "Likes green tea",
    ]
    human.get_by_role("button", name="Delete line 3 of human").click()
    confirm = human.get_by_role("group", name="Confirm: Delete line 3 of human")
    expect(confirm.get_by_role("button", name="Cancel")).to_be_focused()
    confirm.get_by_role("button", name="Remove").click()
    expect(lines).to_have_count(2)
    # The last line gone, the focus goes to its block rather than to nowhere.
    expect(human.get_by_role("heading", name="human")).to_be_focused()
    assert lines_of(server, agent_id, "human") == ["Name: Alice", "Works at: Google DeepMind"]

    # A refused edit keeps the text and says why (the line exists already).
    expected_failures.extend(["409", "412"])
    human.get_by_role("button", name="Edit line 1 of human").click()
    human.get_by_label("Line 1 of human").fill("Works at: Google DeepMind")
    human.get_by_role("button", name="Save").click()
    expect(human.get_by_role("alert")).to_contain_text("Line already exists in [human] at line 2")
    expect(human.get_by_label("Line 1 of human")).to_have_value("Works at: Google DeepMind")
    human.get_by_role("button", name="Cancel").click()

    # The conflict: the block changes behind the page's back, then the page saves.
    behind = httpx2.post(
        f"{server}/agents/{agent_id}/memory/blocks/human/lines",
        json={"content": "Added by the agent meanwhile"},
    )
    assert behind.status_code == 201, behind.text
    human.get_by_role("button", name="Edit line 1 of human").click()
    human.get_by_label("Line 1 of human").fill("Name: Alice Liddell")
    human.get_by_role("button", name="Save").click()
    notice = page.get_by_role("alert").filter(has_text="was changed by someone else")
    expect(notice).to_contain_text("[human]")
    expect(notice).to_contain_text("not saved")
    expect(lines).to_have_count(3)  # reloaded: the other write shows
    expect(lines.nth(2)).to_contain_text("Added by the agent meanwhile")
    assert lines_of(server, agent_id, "human") == [
        "Name: Alice",
        "Works at: Google DeepMind",
        "Added by the agent meanwhile",
    ]
    # Now on the current version, the same edit goes through.
    human.get_by_role("button", name="Edit line 1 of human").click()
    human.get_by_label("Line 1 of human").fill("Name: Alice Liddell")
    human.get_by_role("button", name="Save").click()
    expect(lines.nth(0)).to_contain_text("Name: Alice Liddell")
    expect(human.get_by_role("button", name="Edit line 1 of human")).to_be_focused()
    assert lines_of(server, agent_id, "human")[0] == "Name: Alice Liddell"

    # A block definition: created from the backend's form, its word limit changed.
    page.get_by_text("New block", exact=True).click()
    new_block = page.locator("details", has_text="New block")
    new_block.get_by_label("Name").fill("Projects")
    new_block.get_by_label("Word limit").fill("20")
    new_block.get_by_label("Content").fill("Launch in May\nHire two people")
    new_block.get_by_role("button", name="Create block").click()
    projects = card(page, "projects")
    expect(projects).to_contain_text("6 / 20 words (30%)")
    projects.get_by_text("Definition of projects").click()
    projects.get_by_label("Word limit").fill("7")
    projects.get_by_role("button", name="Save definition").click()
    expect(projects).to_contain_text("6 / 7 words (85%)")
    expect(projects).to_contain_text("near its limit")
    block = httpx2.get(f"{server}/agents/{agent_id}/memory/blocks/projects").json()
    assert (block["word_limit"], block["lines"]) == (7, ["Launch in May", "Hire two people"])
    both_widths(page, "inspector")

    # Archival memory: insert from the form, search with scores, delete.
    archival = page.get_by_role("region", name="Archival memory")
    archival.get_by_text("Insert an archival memory").click()
    archival.get_by_label("Content").fill("Alice drinks green tea every morning")
    archival.get_by_role("button", name="Insert memory").click()
    listed = archival.get_by_role("list", name="Archival memories").get_by_role("listitem")
    expect(listed).to_have_count(1)
    expect(listed.first).to_contain_text("Alice drinks green tea every morning")
    for text in ("The office moved to Zurich in March", "Alice's cat is called Dinah"):
        assert (
            httpx2.post(
                f"{server}/agents/{agent_id}/memory/archival", json={"content": text}
            ).status_code
            == 201
        )
    page.reload()  # the two inserted behind the page's back show
    expect(listed).to_have_count(3)
    archival.get_by_label("Search archival memory").fill("what does Alice drink")
    archival.get_by_role("button", name="Search").click()
    results = archival.get_by_role("list", name="Archival search results").get_by_role("listitem")
    expect(archival.get_by_role("status")).to_contain_text("(hybrid)")
    expect(results.first).to_contain_text("Alice drinks green tea every morning")
    expect(results.first).to_contain_text(re.compile(r"score 0\.\d{4} · similarity -?\d\.\d{4}"))
    archival.get_by_role("button", name=re.compile("Delete archival memory: The office")).click()
    archival.get_by_role("button", name="Delete memory").click()
    expect(listed).to_have_count(2)
    stored = httpx2.get(f"{server}/agents/{agent_id}/memory/archival").json()["memories"]
    assert sorted(m["content"] for m in stored) == [
        "Alice drinks green tea every morning",
        "Alice's cat is called Dinah",
    ]

    # Messages of every conversation, found by what they say.
    messages = page.get_by_role("region", name="Messages")
    messages.get_by_label("Search messages").fill("Where do I work")
    messages.get_by_role("combobox", name="Role").select_option("user")
    messages.get_by_role("button", name="Search").click()
    hits = messages.get_by_role("list", name="Message search results").get_by_role("listitem")
    expect(hits.first).to_contain_text("My name is Alice and I work at Google")
    expect(hits.first).to_contain_text(re.compile(r"score \d\.\d{4}"))
    both_widths(page, "inspector-search")
    hits.first.get_by_role("link", name="open conversation").click()
    expect(page).to_have_url(re.compile(rf"/agents/{agent_id}/chat/[^/]+$"))


def test_archival_by_category_and_message_results_paged(page: Page, server: str) -> None:
    agent: dict[str, Any] = httpx2.post(f"{server}/agents", json={"name": "Paged"}).json()
    memories = [
        ("Alice prefers tea to coffee", "preference"),
        ("Alice prefers window seats", "preference"),
        ("The office is in Zurich", "fact"),
        ("Standups start at nine", None),
    ]
    for content, category in memories:
        stored = httpx2.post(
            f"{server}/agents/{agent['id']}/memory/archival",
            json={"content": content, "category": category},
        )
        assert stored.status_code == 201, stored.text
    for tens in range(0, 25, 10):  # a batch holds 10 at most
        said = [
            {"role": "user", "content": f"Printer ticket {n} is still open"}
            for n in range(tens, min(tens + 10, 25))
        ]
        batch = httpx2.post(
            f"{server}/messages/batch", json={"agent_name": "Paged", "messages": said}
        )
        assert batch.status_code == 201, batch.text
    page.goto(f"/agents/{agent['id']}")

    # The category filter narrows the listing (with its count) and the search alike.
    archival = page.get_by_role("region", name="Archival memory")
    listed = archival.get_by_role("list", name="Archival memories").get_by_role("listitem")
    expect(listed).to_have_count(4)
    archival.get_by_label("Filter by category").select_option("preference")
    expect(listed).to_have_count(2)
    expect(archival).to_contain_text("Memories of category preference, newest first (2)")
    expect(listed.filter(has_text="Zurich")).to_have_count(0)
    archival.get_by_label("Search archival memory").fill("Alice office Zurich tea")
    archival.get_by_role("button", name="Search").click()
    results = archival.get_by_role("list", name="Archival search results").get_by_role("listitem")
    expect(results.first).to_contain_text("Alice prefers")
    for hit in results.all():
        expect(hit).to_contain_text("Alice prefers")
    archival.get_by_label("Filter by category").select_option("capability")
    expect(archival.get_by_text("No archival memories of category capability.")).to_be_visible()
    expect(results).to_have_count(0)  # the other category's hits are gone
    archival.get_by_label("Filter by category").select_option("")
    expect(listed).to_have_count(4)

    # 25 messages found: 20 a page, the next page and back.
    messages = page.get_by_role("region", name="Messages")
    messages.get_by_label("Search messages").fill("printer ticket")
    messages.get_by_role("button", name="Search").click()
    hits = messages.get_by_role("list", name="Message search results").get_by_role("listitem")
    status = messages.get_by_role("status")
    expect(status).to_contain_text("25 found")
    expect(status).to_contain_text("1\N{EN DASH}20 of 25")
    expect(hits).to_have_count(20)
    expect(messages.get_by_role("button", name="Previous results")).to_be_disabled()
    first_page = set(hits.all_inner_texts())
    # Paging keeps the search that was made, even if the box has changed since.
    messages.get_by_label("Search messages").fill("something else")
    messages.get_by_role("button", name="Next results").click()
    expect(status).to_contain_text("21\N{EN DASH}25 of 25")
    expect(hits).to_have_count(5)
    expect(messages.get_by_role("button", name="Next results")).to_be_disabled()
    assert not first_page & set(hits.all_inner_texts())
    messages.get_by_role("button", name="Previous results").click()
    expect(status).to_contain_text("1\N{EN DASH}20 of 25")
    assert set(hits.all_inner_texts()) == first_page


def test_seed_004s_dashboard_url_opens_the_inspector(page: Page, server: str) -> None:
    started = httpx2.post(
        f"{server}/memory/initialize",
        json={"user_id": "customer_42", "user_info": "Prefers email"},
    )
    assert started.status_code == 200, started.text
    found = httpx2.get(f"{server}/memory/agent/customer_42").json()
    assert found["dashboard_url"] == f"{server}/agents/{found['agent_id']}"
    page.goto(found["dashboard_url"])
    expect(page.get_by_role("heading", name=re.compile("^Memory of"))).to_be_visible()
    expect(card(page, "human")).to_contain_text("Prefers email")


def test_an_unknown_agent_says_so(page: Page, expected_failures: list[str]) -> None:
    expected_failures.append("404")
    page.goto("/agents/no-such-agent")
    expect(page.get_by_role("heading", name="No such agent")).to_be_visible()


def test_provider_settings_saved_masked_and_tested(
    page: Page, server: str, fake_openai: FakeLLM, expected_failures: list[str]
) -> None:
    secret = "sk-browser-test-0123456789"
    page.goto("/agents")
    page.get_by_role("link", name="Providers").click()
    openai = page.get_by_role("article", name="OpenAI (or an OpenAI-compatible server)")
    expect(openai.get_by_role("status")).to_have_text("Not configured.")
    expect(openai.get_by_role("button", name="Test connection")).to_have_count(0)

    # The renderer checks what the schema says before anything is sent.
    openai.get_by_label("Base URL").fill("not a url")
    openai.get_by_role("button", name=re.compile("^Save")).click()
    expect(openai.get_by_text("API key is required.")).to_be_visible()
    expect(openai.get_by_text("Base URL must be a full http(s) URL.")).to_be_visible()

    openai.get_by_label("API key").fill(secret)
    openai.get_by_label("Base URL").fill(fake_openai.base_url)
    openai.get_by_role("button", name=re.compile("^Save")).click()
    expect(openai.get_by_text("Saved.")).to_be_visible()
    stored = openai.get_by_role("definition").first
    expect(stored).to_have_text("…6789")  # the server's mask: the last 4 characters
    # Never read back: not in the form, not anywhere in the page.
    expect(openai.get_by_label("API key")).to_have_value("")
    expect(openai.get_by_label("API key")).to_have_attribute("placeholder", re.compile("stored"))
    assert secret not in page.content()
    assert httpx2.get(f"{server}/settings/providers/openai").json()["values"]["api_key"] == "…6789"

    openai.get_by_role("button", name="Test connection").click()
    expect(openai.get_by_role("status").last).to_contain_text(
        "Connected: 2 models (gpt-5.4, gpt-5.4-mini)."  # the fake's, sorted by the server
    )
    both_widths(page, "settings")

    # Saved again with the key left empty: the stored key stays (the test still connects).
    openai.get_by_label("Organization").fill("org-web")
    openai.get_by_role("button", name=re.compile("^Save")).click()
    expect(openai.get_by_role("definition").nth(2)).to_have_text("org-web")
    openai.get_by_role("button", name="Test connection").click()
    expect(openai.get_by_role("status").last).to_contain_text("Connected: 2 models")

    # A key the provider refuses: the test says so, with the provider's reason.
    expected_failures.extend(["401", "502", "400"])
    openai.get_by_label("API key").fill(BAD_KEY)
    openai.get_by_role("button", name=re.compile("^Save")).click()
    expect(openai.get_by_text("Saved.")).to_be_visible()
    openai.get_by_role("button", name="Test connection").click()
    expect(openai.get_by_role("alert")).to_contain_text("Connection failed:")
    failure = openai.get_by_role("alert").inner_text()
    assert "refused the API key" in failure, failure
    assert not re.search(r"\(provider_[a-z_]+\)", failure), failure  # words, not codes

    openai.get_by_role(
        "button", name="Remove OpenAI (or an OpenAI-compatible server) settings"
    ).click()
    openai.get_by_role("button", name="Remove", exact=True).click()
    expect(openai.get_by_role("status").first).to_have_text("Not configured.")
    assert httpx2.get(f"{server}/settings/providers").json() == []
