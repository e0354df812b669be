"""Every adapter lets go of its connections when closed (the provider cache closes the ones
it drops, and all of them at shutdown)."""

from collections.abc import Callable

import pytest

from api.llm.anthropic import AnthropicProvider
from api.llm.bedrock import BedrockProvider
from api.llm.offline import OfflineProvider
from api.llm.openai import OpenAIProvider


async def test_the_http_adapters_close_their_clients() -> None:
    openai = OpenAIProvider(api_key="k", base_url="http://127.0.0.1:9/v1")
    anthropic = AnthropicProvider(api_key="k", base_url="http://127.0.0.1:9")
    assert not openai._client.is_closed()
    assert not anthropic._client.is_closed()
    await openai.aclose()
    await anthropic.aclose()
    assert openai._client.is_closed()
    assert anthropic._client.is_closed()


async def test_bedrock_closes_its_boto3_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    bedrock = BedrockProvider(
        region="us-east-1",
        access_key_id="a",
        secret_access_key="b",
        endpoint_url="http://127.0.0.1:9",
    )
    closed: list[str] = []

    def recording(name: str, close: Callable[[], None]) -> Callable[[], None]:
        def record() -> None:
            closed.append(name)
            close()

        return record

    for name in ("_runtime", "_control"):
        client = getattr(bedrock, name)
        monkeypatch.setattr(client, "close", recording(name, client.close))
    await bedrock.aclose()
    assert sorted(closed) == ["_control", "_runtime"]


async def test_the_offline_model_has_nothing_to_close() -> None:
    offline = OfflineProvider()
    await offline.aclose()
    assert await offline.list_models() == ["offline-demo"]
