"""The OpenAI-compatible endpoint under a real uvicorn server (local mode, no key), driven
by the official `openai` SDK; agents on the offline model or on the fake OpenAI."""

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionMessageParam

from api.config import Settings
from api.main import create_app
from tests.fakes.serving import serve_in_thread

# The SDK always sends a key; local mode needs none, so any will do.
ANY_KEY = "anything"


@dataclass(frozen=True)
class Server:
    root: str
    http: httpx2.Client  # our REST API, to set agents up and look at their memory

    @property
    def v1(self) -> str:
        return self.root + "/v1"

    def sdk(self, **options: Any) -> OpenAI:
        return OpenAI(base_url=self.v1, api_key=ANY_KEY, **{"max_retries": 0, **options})

    def async_sdk(self, **options: Any) -> AsyncOpenAI:
        return AsyncOpenAI(base_url=self.v1, api_key=ANY_KEY, **{"max_retries": 0, **options})


def serve(settings: Settings, name: str = "openai-compat") -> Any:
    def build(root: str) -> tuple[str, FastAPI]:
        return root, create_app(settings)

    return serve_in_thread(name, build, "/health", lifespan="on")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        sqlite_path=tmp_path / "v1.db", encryption_key="k" * 40, memory_embedding_backend="none"
    )


@pytest.fixture
def server(settings: Settings) -> Iterator[Server]:
    with serve(settings) as root, httpx2.Client(base_url=root, timeout=30) as http:
        yield Server(root, http)


@pytest.fixture
def sdk(server: Server) -> Iterator[OpenAI]:
    with server.sdk() as client:
        yield client


@pytest.fixture
async def async_sdk(server: Server) -> AsyncIterator[AsyncOpenAI]:
    async with server.async_sdk() as client:
        yield client


def user_says(text: str) -> list[ChatCompletionMessageParam]:
    return [{"role": "user", "content": text}]
