"""Helpers every wire-format adapter shares."""

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from api.llm.errors import ProviderBadResponse
from api.llm.types import ChatMessage

Block = dict[str, Any]


def parse_tool_arguments(provider: str, tool: str, raw: str) -> Mapping[str, Any]:
    """A tool call's arguments, which must be a JSON object (an empty string means none)."""
    if not raw.strip():
        return {}
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ProviderBadResponse(
            f"{provider} sent arguments for the tool {tool!r} that are not valid JSON."
        ) from e
    if not isinstance(arguments, dict):
        raise ProviderBadResponse(
            f"{provider} sent arguments for the tool {tool!r} that are not a JSON object."
        )
    return arguments


def alternating_turns(
    messages: Sequence[ChatMessage], blocks_of: Callable[[ChatMessage], list[Block]]
) -> list[dict[str, Any]]:
    """Turns for the APIs whose roles must alternate (Anthropic, Bedrock): tool results
    travel in a user turn, consecutive turns of one role merge, and empty ones are left
    out, as those APIs refuse them. System messages are not turns there."""
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        blocks = blocks_of(m)
        if not blocks:
            continue
        role = "assistant" if m.role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += blocks
        else:
            turns.append({"role": role, "content": blocks})
    return turns
