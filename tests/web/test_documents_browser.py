"""An agent's documents in Chromium against a real server: a Markdown file uploaded from
the inspector becomes ready with its passages counted, a file the service cannot read is
refused in plain words, a document is deleted after a second question; a 100-character
file name does not widen a phone's page."""

import uuid

import httpx2
from playwright.sync_api import FilePayload, Page, expect

from tests.web.conftest import shoot

GUIDE = b"""# Guide

## Billing

Refunds are accepted within 30 days of purchase.

## Shipping

Parcels leave the warehouse every weekday.
"""


def test_upload_see_it_ready_and_delete_it(page: Page, server: str) -> None:
    made = httpx2.post(f"{server}/agents", json={"name": f"Librarian {uuid.uuid4().hex[:6]}"})
    assert made.status_code == 201, made.text
    agent = made.json()["id"]
    name = "handbook-" + "x" * 88 + ".md"
    assert len(name) == 100

    page.goto(f"/agents/{agent}")
    section = page.get_by_role("region", name="Documents")
    expect(section.get_by_text("No documents yet.")).to_be_visible()
    expect(section).to_contain_text("Markdown (.md)")
    expect(section).to_contain_text("up to 10 MB")
    picker = section.get_by_label("File", exact=True)

    # A file it cannot read: said plainly, and nothing listed.
    picker.set_input_files(FilePayload(name="photo.png", mimeType="image/png", buffer=b"\x89PNG"))
    section.get_by_role("button", name="Upload").press("Enter")
    refusal = section.get_by_role("alert")
    expect(refusal).to_contain_text("'photo.png'")
    expect(refusal).to_contain_text("is not a type this service reads")
    expect(refusal).not_to_contain_text("unsupported_document_type")
    expect(section.get_by_text("No documents yet.")).to_be_visible()

    picker.set_input_files(FilePayload(name=name, mimeType="text/markdown", buffer=GUIDE))
    picker.focus()
    page.keyboard.press("Tab")  # to Upload
    page.keyboard.press("Enter")
    listed = section.get_by_role("list", name="Documents").get_by_role("listitem")
    expect(listed).to_have_count(1)
    expect(listed.first).to_contain_text(name)
    # The page asks again while it processes, and stops once it is ready.
    expect(listed.first).to_contain_text("Ready")
    expect(listed.first).to_contain_text("2 passages")
    expect(section.get_by_role("alert")).to_have_count(0)
    shoot(page, "inspector-documents")

    page.set_viewport_size({"width": 390, "height": 800})
    expect(listed.first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = listed.first.bounding_box()
    assert box is not None
    assert box["x"] + box["width"] <= 390
    shoot(page, "inspector-documents")

    section.get_by_role("button", name=f"Delete {name}").press("Enter")
    confirm = section.get_by_role("group", name=f"Confirm: Delete {name}")
    expect(confirm.get_by_role("button", name="Cancel")).to_be_focused()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    confirm.get_by_role("button", name="Yes, delete").click()
    expect(listed).to_have_count(0)
    expect(section).to_contain_text(f"Deleted {name}.")
    documents = httpx2.get(f"{server}/agents/{agent}/documents").json()["documents"]
    assert documents == []
