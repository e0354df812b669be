"""History and undo in the memory inspector, in headless Chromium against a real server
process: a block's versions read as lines removed and added with who changed them, one
restored with If-Match (and a conflict said plainly); an archival memory deleted then
brought back with Undo; by keyboard, and with no horizontal overflow at 390 px."""

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.web.conftest import open_page, overflow, shoot
from tests.web.servers import serving


@pytest.fixture(scope="module")
def server(built_app: object) -> Iterator[str]:
    with serving({"AUTH_MODE": "local"}) as root:
        yield root


@pytest.fixture
def expected_failures() -> list[str]:
    """Statuses a test provokes on purpose: Chromium logs every failed fetch as an error."""
    return []


@pytest.fixture
def page(browser: Browser, server: str, expected_failures: list[str]) -> Iterator[Page]:
    yield from open_page(browser, server, console_errors_but=expected_failures)


def at_both_widths(page: Page, name: str) -> None:
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert overflow(page) == 0, (name, width)
        shoot(page, name)
    page.set_viewport_size({"width": 1440, "height": 900})


def lines_of(server: str, agent_id: str) -> list[str]:
    lines: list[str] = httpx2.get(f"{server}/agents/{agent_id}/memory/blocks/human").json()["lines"]
    return lines


def card(page: Page, block: str) -> Locator:
    return page.get_by_role("article", name=block, exact=True)


def test_a_block_version_restored_from_its_history(
    page: Page, server: str, expected_failures: list[str]
) -> None:
    agent: dict[str, Any] = httpx2.post(f"{server}/agents", json={"name": "Historian"}).json()
    base = f"{server}/agents/{agent['id']}/memory/blocks/human"
    long_line = "Favourite-word: " + "x" * 90  # no spaces: must wrap, not widen the page
    for line in ("Name: Alice Moreira", "Lives in: Porto", long_line):
        assert httpx2.post(f"{base}/lines", json={"content": line}).status_code == 201
    assert httpx2.put(f"{base}/lines/2", json={"content": "Lives in: Lisbon"}).status_code == 200

    page.goto(f"/agents/{agent['id']}")
    human = card(page, "human")
    expect(human).to_contain_text("version 5")
    # By keyboard: the history's summary is a control; Enter opens it.
    human.get_by_text("History of human").focus()
    page.keyboard.press("Enter")
    entries = human.get_by_role("list", name="Versions of human").locator(":scope > li")
    expect(entries).to_have_count(5)  # and version 1, before them all
    newest = entries.nth(0)
    expect(newest).to_contain_text("Version 5")
    expect(newest).to_contain_text("Edited over the API or in this page")
    expect(newest.get_by_role("list", name="What version 5 changed")).to_contain_text(
        "Lives in: Porto"
    )
    expect(newest.locator(".removed")).to_contain_text("Lives in: Porto")
    expect(newest.locator(".added")).to_contain_text("Lives in: Lisbon")
    expect(newest).to_contain_text("The current version")
    expect(entries.nth(4)).to_contain_text("Before the changes above")
    expect(human.get_by_role("button", name="Restore version 1 of human")).to_be_visible()
    at_both_widths(page, "history")

    # Version 3: before the long line and the move. Restore it by keyboard.
    restore = human.get_by_role("button", name="Restore version 3 of human")
    restore.focus()
    page.keyboard.press("Enter")
    expect(human).to_contain_text("version 6")
    assert lines_of(server, agent["id"]) == ["Name: Alice Moreira", "Lives in: Porto"]
    expect(entries.nth(0)).to_contain_text("Restored from version 3")
    expect(human.get_by_role("heading", name="human")).to_be_focused()

    # A write behind the page's back: the restore is refused and the page says so plainly.
    expected_failures.append("412")
    assert httpx2.post(f"{base}/lines", json={"content": "Meanwhile"}).status_code == 201
    human.get_by_role("button", name="Restore version 2 of human").click()
    notice = page.get_by_role("alert").filter(has_text="was changed by someone else")
    expect(notice).to_contain_text("not saved")
    expect(human).to_contain_text("version 7")  # reloaded
    assert lines_of(server, agent["id"])[-1] == "Meanwhile"
    at_both_widths(page, "history-conflict")


def test_an_archival_memory_deleted_then_undone(page: Page, server: str) -> None:
    agent: dict[str, Any] = httpx2.post(f"{server}/agents", json={"name": "Undoer"}).json()
    base = f"{server}/agents/{agent['id']}/memory/archival"
    for text in ("Alice's cat is called Dinah", "The office moved to Zurich in March"):
        assert httpx2.post(base, json={"content": text}).status_code == 201
    page.goto(f"/agents/{agent['id']}")
    archival = page.get_by_role("region", name="Archival memory")
    listed = archival.get_by_role("list", name="Archival memories").get_by_role("listitem")
    expect(listed).to_have_count(2)

    archival.get_by_role("button", name="Delete archival memory: Alice's cat").click()
    archival.get_by_role("button", name="Delete memory").click()
    expect(listed).to_have_count(1)
    offer = archival.get_by_role("status").filter(has_text="Deleted")
    expect(offer).to_contain_text("Alice's cat is called Dinah")
    expect(offer).to_contain_text("You can undo this until")
    undo = offer.get_by_role("button", name="Undo")
    expect(undo).to_be_focused()  # the keyboard lands on the offer
    assert len(httpx2.get(base).json()["memories"]) == 1
    at_both_widths(page, "archival-undo")

    page.keyboard.press("Enter")
    expect(listed).to_have_count(2)
    expect(offer).to_have_count(0)
    back = httpx2.get(f"{base}/search", params={"query": "cat Dinah"}).json()["memories"]
    assert [m["content"] for m in back][:1] == ["Alice's cat is called Dinah"]
