"""The provider SDKs' transport: several connection pools taking requests in turn, every
stream intact; the SDK's own transport when the environment names a proxy."""

import asyncio

import pytest

from api.llm import http
from api.llm import openai as openai_adapter
from api.llm.openai import OpenAIProvider
from api.llm.types import ChatMessage, ChatRequest, TextDelta
from tests.fakes.llm_servers import Reply, start_fake_openai

REQUEST = ChatRequest(model="gpt-5.4-mini", messages=[ChatMessage("user", "Tell me a story")])


async def test_concurrent_streams_spread_over_the_pools_and_keep_their_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    transport = http.PooledTransport(pools=4)
    monkeypatch.setattr(openai_adapter, "provider_transport", lambda: transport)
    with start_fake_openai() as fake:
        fake.replies += [Reply(text=f"Story {i} goes here.") for i in range(12)]
        provider = OpenAIProvider(api_key="k", base_url=fake.base_url, max_retries=0)

        async def told() -> str:
            return "".join(
                [e.text async for e in provider.stream(REQUEST) if isinstance(e, TextDelta)]
            )

        stories = await asyncio.gather(*(told() for _ in range(12)))
        # Each pool took its share of the requests (httpcore's pool keeps their connections).
        assert all(pool._pool.connections for pool in transport.pools)
        await provider.aclose()
    assert sorted(stories) == sorted(f"Story {i} goes here." for i in range(12))


def test_a_proxy_in_the_environment_keeps_the_sdks_own_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    assert http.provider_transport() is None
    monkeypatch.delenv("HTTPS_PROXY")
    for name in ("HTTP_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(http.provider_transport(), http.PooledTransport)
