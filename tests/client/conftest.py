"""The learning() client against real things: a memory server process (`python -m api.cli
serve`, SQLite in a temporary directory), the fake OpenAI and Anthropic servers speaking
their wire formats on 127.0.0.1, and the official SDKs pointed at them."""

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from anthropic import Anthropic, AsyncAnthropic
from anthropic.types import MessageParam
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionMessageParam

from client.formatting import HEADER
from tests.client.server_process import MemoryServer, memory_server
from tests.fakes.llm_servers import FakeLLM


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    """One memory server for the whole run; each test uses agents of its own."""
    with memory_server(tmp_path_factory.mktemp("memory") / "memory.db") as running:
        yield running


@pytest.fixture
def agent() -> str:
    return f"agent-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def oai(fake_openai: FakeLLM) -> Iterator[OpenAI]:
    with OpenAI(base_url=fake_openai.base_url, api_key="sk-test", max_retries=0) as sdk:
        yield sdk


@pytest.fixture
async def aoai(fake_openai: FakeLLM) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=fake_openai.base_url, api_key="sk-test", max_retries=0)


@pytest.fixture
def claude(fake_anthropic: FakeLLM) -> Iterator[Anthropic]:
    with Anthropic(base_url=fake_anthropic.base_url, api_key="sk-ant", max_retries=0) as sdk:
        yield sdk


@pytest.fixture
async def aclaude(fake_anthropic: FakeLLM) -> AsyncAnthropic:
    return AsyncAnthropic(base_url=fake_anthropic.base_url, api_key="sk-ant", max_retries=0)


def ask(text: str, system: str | None = None) -> list[ChatCompletionMessageParam]:
    """A chat request's messages: the user's text, after a system message if given."""
    messages: list[ChatCompletionMessageParam] = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": text})
    return messages


def ask_claude(text: str) -> list[MessageParam]:
    return [{"role": "user", "content": text}]


def memory_in(request: dict[str, Any]) -> str:
    """The memory the interceptor put in a chat request (its injected system message)."""
    injected = [
        m["content"]
        for m in request["messages"]
        if m["role"] == "system" and str(m["content"]).startswith(HEADER)
    ]
    assert len(injected) == 1, request["messages"]
    return str(injected[0])
