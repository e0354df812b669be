"""The new-agent form in Chromium: drawn at once while a provider is slow to list its models,
each provider's models arriving on their own, and a model that follows the provider."""

import socket
from collections.abc import Iterator

import httpx2
import pytest
from playwright.sync_api import Page, expect

from tests.fakes.llm_servers import FakeLLM, start_fake_openai
from tests.web.servers import serving

OPENAI = "OpenAI (or an OpenAI-compatible server)"


@pytest.fixture(scope="module")
def server(built_app: object) -> Iterator[str]:
    """A server of this module's own: its tests configure the one user's OpenAI."""
    with serving({"AUTH_MODE": "local", "MEMORY_EMBEDDING_BACKEND": "none"}) as root:
        yield root


def use_openai_at(server: str, base_url: str) -> None:
    saved = httpx2.put(
        f"{server}/settings/providers/openai",
        json={"api_key": "sk-browser-test-123456", "base_url": base_url},
    )
    assert saved.status_code == 200, saved.text


@pytest.fixture
def silent_provider(server: str) -> Iterator[None]:
    """OpenAI at an address that takes connections and never answers."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    use_openai_at(server, f"http://127.0.0.1:{silent.getsockname()[1]}/v1")
    yield
    silent.close()


@pytest.fixture
def fake_openai(server: str) -> Iterator[FakeLLM]:
    with start_fake_openai() as fake:
        use_openai_at(server, fake.base_url)
        yield fake


def test_the_form_is_drawn_while_a_provider_is_silent(page: Page, silent_provider: None) -> None:
    page.goto("/agents/new")
    name = page.get_by_label("Name")
    expect(name).to_be_visible()
    page.get_by_label("LLM provider").select_option(label=OPENAI)
    # Drawn before OpenAI answered: its models are still being listed.
    expect(page.get_by_text("Loading the models of openai…")).to_be_visible()
    # The keyboard moves through the form, not past it.
    name.focus()
    page.keyboard.press("Tab")
    expect(page.get_by_label("Architecture")).to_be_focused()
    # The silent provider gives up on its own; the offline models were there all along.
    expect(page.get_by_text("The models of openai could not be listed")).to_be_visible(
        timeout=10_000
    )
    page.get_by_label("LLM provider").select_option(label="Offline demo model (no network)")
    expect(page.get_by_label("Model")).to_have_value("offline-demo")
    page.get_by_label("Name").fill("Made while OpenAI was silent")
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_role("heading", name="Made while OpenAI was silent")).to_be_visible()


def test_the_model_follows_the_provider(page: Page, server: str, fake_openai: FakeLLM) -> None:
    page.goto("/agents/new")
    model = page.get_by_label("Model")
    expect(model).to_have_value("offline-demo")
    # Chosen at once, whether OpenAI's models have arrived yet or not: either way the
    # model becomes one of OpenAI's.
    page.get_by_label("LLM provider").select_option(label=OPENAI)
    expect(model).not_to_have_value("offline-demo")  # not OpenAI's: its first model instead
    assert model.input_value() in fake_openai.models
    model.fill("offline-demo")
    expect(page.get_by_text("offline-demo is not among the models openai lists.")).to_be_visible()
    model.fill(fake_openai.models[-1])
    expect(page.get_by_text("is not among the models")).to_have_count(0)
    page.get_by_label("Name").fill("Follows its provider")
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_role("heading", name="Follows its provider")).to_be_visible()
    agents = httpx2.get(f"{server}/agents").json()
    made = next(a for a in agents if a["name"] == "Follows its provider")
    assert (made["provider"], made["model"]) == ("openai", fake_openai.models[-1])
