"""The context windows the preview measures against: known models by provider, and None
(never a guess) for a model the table does not know."""

import pytest

from api.llm.windows import context_window


@pytest.mark.parametrize(
    ("provider", "model", "window"),
    [
        ("openai", "gpt-4o", 128_000),
        ("openai", "gpt-4o-mini-2024-07-18", 128_000),
        ("openai", "gpt-4.1-mini", 1_047_576),
        ("anthropic", "claude-sonnet-4-6", 200_000),
        ("bedrock", "us.anthropic.claude-3-5-sonnet-20241022-v2:0", 200_000),
        ("bedrock", "amazon.nova-micro-v1:0", 128_000),
        ("offline", "offline-demo", 8_192),
        # Unknown: a model we have no figure for, or a known name on another provider (an
        # OpenAI-compatible server may serve anything as "claude-...").
        ("openai", "gpt-5.4-mini", None),
        ("openai", "llama3:8b", None),
        ("openai", "claude-sonnet-4-6", None),
        ("bedrock", "cohere.command-r-v1:0", None),
    ],
)
def test_known_windows_and_unknown_ones(provider: str, model: str, window: int | None) -> None:
    assert context_window(provider, model) == window
