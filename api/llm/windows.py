"""How many tokens a model takes in at once (its context window), for the models we know:
the context preview measures a turn's prompt against it. A model not listed is unknown
(None), never guessed: providers serve models by many names (OpenAI-compatible servers,
Bedrock's regional prefixes), and a wrong window would mislead more than none."""

import re

# (provider, pattern of the model's name) -> window, first match wins. Bedrock's ids carry a
# regional prefix ("us.", "eu.") and a version suffix, hence search rather than match.
WINDOWS: list[tuple[str, str, int]] = [
    ("offline", r"^offline-demo$", 8_192),  # ours: what its replies are sized for
    ("openai", r"^gpt-4\.1", 1_047_576),
    ("openai", r"^gpt-4o", 128_000),
    ("openai", r"^gpt-4-turbo", 128_000),
    ("openai", r"^o[134](-mini)?\b", 200_000),
    ("openai", r"^gpt-3\.5-turbo", 16_385),
    ("anthropic", r"^claude-", 200_000),
    ("bedrock", r"anthropic\.claude-", 200_000),
    ("bedrock", r"amazon\.nova-(pro|lite)", 300_000),
    ("bedrock", r"amazon\.nova-micro", 128_000),
    ("bedrock", r"meta\.llama3-[12]", 128_000),
    ("bedrock", r"mistral\.mistral-large", 128_000),
]


def context_window(provider: str, model: str) -> int | None:
    """The model's window in tokens, or None when we do not know it."""
    for known, pattern, window in WINDOWS:
        if known == provider and re.search(pattern, model):
            return window
    return None
