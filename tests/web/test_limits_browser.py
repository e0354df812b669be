"""Limits, said rather than enforced silently: the longest names the API takes, without a
space to break at, on every page that shows them at a phone's width and a desktop's (nothing
wider than the window, nothing cut off); text past a limit kept whole and counted, not cut;
a line that is already there said so."""

import re
from collections.abc import Iterator

import httpx2
import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import overflow, shoot

WIDTHS = (390, 1440)
LONGEST = "W" * 100  # AgentCreate's maximum, one unbreakable word


@pytest.fixture
def long_named(server: str) -> Iterator[str]:
    made = httpx2.post(
        f"{server}/agents",
        json={"name": LONGEST, "architecture": "krishna-memgpt", "provider": "offline"},
    )
    assert made.status_code == 201, made.text
    agent_id: str = made.json()["id"]
    yield agent_id
    httpx2.delete(f"{server}/agents/{agent_id}")


def fits(page: Page, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(50)  # a layout pass
        shoot(page, f"long-name-{name}")
        assert overflow(page) == 0, f"{name} at {width} px is {overflow(page)} px too wide"
    page.set_viewport_size({"width": 1440, "height": 900})


def test_a_long_name_fits_every_page(page: Page, long_named: str) -> None:
    page.goto("/agents")
    expect(page.get_by_role("heading", name=LONGEST)).to_be_visible()
    fits(page, "agents")

    page.goto(f"/agents/{long_named}/chat")
    expect(page.get_by_role("heading", name=LONGEST)).to_be_visible()
    fits(page, "chat")
    # Nothing lies over the composer: the point at its middle is the composer's.
    composer = page.get_by_label("Message", exact=True)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        composer.scroll_into_view_if_needed()
        on_top = composer.evaluate(
            "t => { const r = t.getBoundingClientRect();"
            " return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2) === t; }"
        )
        assert on_top, f"something covers the composer at {width} px"

    page.goto(f"/agents/{long_named}")
    expect(page.get_by_role("heading", level=1)).to_contain_text(LONGEST[:20])
    fits(page, "inspector")

    page.goto(f"/agents/{long_named}/edit")
    expect(page.get_by_label("Name")).to_have_value(LONGEST)
    fits(page, "edit")


def test_the_delete_dialog_of_a_long_name_is_whole_on_a_phone(page: Page, long_named: str) -> None:
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto("/agents")
    page.get_by_role("button", name=f"Delete {LONGEST}").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    box = dialog.bounding_box()
    assert box is not None
    assert box["x"] >= 0, box
    assert box["x"] + box["width"] <= 390, box
    inside = dialog.evaluate("d => d.scrollWidth - d.clientWidth")
    assert inside == 0, f"the dialog's content is {inside} px wider than the dialog"
    cancel = dialog.get_by_role("button", name="Cancel")
    expect(cancel).to_be_in_viewport()
    cancel_box = cancel.bounding_box()
    assert cancel_box is not None
    assert cancel_box["x"] + cancel_box["width"] <= 390, cancel_box
    shoot(page, "long-name-delete-dialog")
    cancel.click()
    expect(dialog).to_be_hidden()


def test_text_past_a_limit_is_kept_and_counted_not_cut(page: Page, long_named: str) -> None:
    page.goto("/agents/new")
    name = page.get_by_label("Name")
    name.fill("N" * 150)  # as a paste would
    expect(name).to_have_value("N" * 150)
    expect(page.get_by_text("150 / 100 characters — 50 too many")).to_be_visible()
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_text("Name takes at most 100 characters.")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/agents/new$"))  # nothing was sent

    page.goto(f"/agents/{long_named}/chat")
    composer = page.get_by_label("Message", exact=True)
    composer.fill("a" * 26_000)
    expect(page.get_by_text("26,000 / 32,000 characters")).to_be_visible()
    composer.fill("a" * 32_001)
    expect(page.get_by_text("32,001 / 32,000 characters — 1 too many")).to_be_visible()
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    composer.press("Enter")
    expect(composer).to_have_value("a" * 32_001)  # not sent, not cleared


def test_appending_a_line_already_there_says_so(page: Page, server: str, long_named: str) -> None:
    human = f"{server}/agents/{long_named}/memory/blocks/human"
    version = httpx2.get(human).json()["version"]
    added = httpx2.post(
        f"{human}/lines", json={"content": "Likes tea"}, headers={"If-Match": f'"{version}"'}
    )
    assert added.status_code in (200, 201), added.text
    page.goto(f"/agents/{long_named}")
    line = page.get_by_label("New line for human")
    line.fill("Likes tea")
    line.press("Enter")
    expect(page.get_by_role("status").filter(has_text="already says “Likes tea”")).to_be_visible()
    assert httpx2.get(human).json()["lines"].count("Likes tea") == 1
