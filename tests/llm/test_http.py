"""The provider SDKs send through aiohttp (their own adapter for it), every stream intact,
one TLS context shared, redirects never followed, and a proxy named by the environment
honoured."""

import asyncio

import httpx2
import pytest

from api.kit import tls
from api.llm.anthropic import AnthropicProvider
from api.llm.openai import OpenAIProvider
from api.llm.types import ChatMessage, ChatRequest, TextDelta
from tests.fakes.llm_servers import Reply, start_fake_openai

REQUEST = ChatRequest(model="gpt-5.4-mini", messages=[ChatMessage("user", "Tell me a story")])
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")


def http_client(provider: OpenAIProvider | AnthropicProvider) -> httpx2.AsyncClient:
    client: httpx2.AsyncClient = provider._client._client  # the SDK's HTTP client
    return client


async def test_concurrent_streams_through_aiohttp_keep_their_text() -> None:
    with start_fake_openai() as fake:
        fake.replies += [Reply(text=f"Story {i} goes here.") for i in range(12)]
        provider = OpenAIProvider(api_key="k", base_url=fake.base_url, max_retries=0)

        async def told() -> str:
            return "".join(
                [e.text async for e in provider.stream(REQUEST) if isinstance(e, TextDelta)]
            )

        stories = await asyncio.gather(*(told() for _ in range(12)))
        transport = http_client(provider)._transport
        await provider.aclose()
    assert type(transport).__name__ == "AiohttpTransport"
    assert sorted(stories) == sorted(f"Story {i} goes here." for i in range(12))


@pytest.mark.parametrize("make", [OpenAIProvider, AnthropicProvider])
def test_every_provider_client_shares_one_tls_context_and_follows_no_redirect(
    make: type[OpenAIProvider] | type[AnthropicProvider],
) -> None:
    client = http_client(make(api_key="k"))
    transport = client._transport
    assert type(transport).__name__ == "AiohttpTransport"
    assert getattr(transport, "ssl_context") is tls.shared_ssl_context()  # noqa: B009
    assert client.follow_redirects is False


def test_a_proxy_in_the_environment_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert not http_client(OpenAIProvider(api_key="k"))._mounts
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    mounts = http_client(OpenAIProvider(api_key="k"))._mounts
    proxied = [getattr(t, "proxy", None) for t in mounts.values() if t is not None]
    assert [str(p.url) for p in proxied if p is not None] == ["http://proxy.internal:3128"]
