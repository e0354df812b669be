"""Export and import from the page, in Chromium against a real server: an agent downloaded
as its export file, deleted, and brought back by uploading that file, memory and all; a file
that is not an export refused with the API's reason, storing nothing."""

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.web.conftest import open_page


@pytest.fixture
def page(browser: Browser, server: str) -> Iterator[Page]:
    yield from open_page(browser, server, accept_downloads=True)


def test_an_agent_exported_deleted_and_imported_from_the_page(
    page: Page, server: str, tmp_path: Path
) -> None:
    name = f"Traveller {uuid.uuid4().hex[:6]}"
    agent = httpx2.post(f"{server}/agents", json={"name": name}).json()
    human = f"{server}/agents/{agent['id']}/memory/blocks/human"
    version = httpx2.get(human).json()["version"]
    added = httpx2.post(
        f"{human}/lines", json={"content": "Likes trains"}, headers={"If-Match": f'"{version}"'}
    )
    assert added.status_code in (200, 201), added.text

    page.goto("/agents")
    with page.expect_download() as downloading:
        page.get_by_role("button", name=f"Export {name}").click()
    download = downloading.value
    assert download.suggested_filename == f"agent-{agent['id']}.jsonl"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    assert '"Likes trains"' in saved.read_text()

    page.get_by_role("button", name=f"Delete {name}").click()
    page.get_by_role("button", name="Delete agent and its memory").click()
    expect(page.get_by_role("heading", name=name)).to_have_count(0)

    page.get_by_text("Import an agent").click()
    page.get_by_label("Export file").set_input_files(saved)
    imported = page.get_by_role("list", name="Imported")
    expect(imported).to_contain_text(f"Imported {name}")
    expect(page.get_by_role("heading", name=name)).to_be_visible()  # listed again
    imported.get_by_role("link", name="Chat with it").click()
    expect(page.get_by_role("complementary", name="Core memory")).to_contain_text("Likes trains")

    # The same file again: recognised, nothing changed.
    page.goto("/agents")
    page.get_by_text("Import an agent").click()
    page.get_by_label("Export file").set_input_files(saved)
    expect(page.get_by_role("list", name="Imported")).to_contain_text(
        f"Imported before (nothing changed): {name}"
    )
    assert [a["name"] for a in httpx2.get(f"{server}/agents").json()].count(name) == 1


def test_a_file_that_is_no_export_is_refused_with_the_reason(
    page: Page, server: str, tmp_path: Path
) -> None:
    before = httpx2.get(f"{server}/agents").json()
    bogus = tmp_path / "notes.jsonl"
    bogus.write_text('{"hello": "world"}\n')
    page.goto("/agents")
    page.get_by_text("Import an agent").click()
    page.get_by_label("Export file").set_input_files(bogus)
    alert = page.get_by_role("alert")
    expect(alert).to_be_visible()
    expect(alert).not_to_contain_text("_")  # words, not a code
    assert httpx2.get(f"{server}/agents").json() == before
