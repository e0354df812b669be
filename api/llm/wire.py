"""Helpers every wire-format adapter shares."""

import json
from collections.abc import Callable, Sequence
from typing import Any

from api.llm.types import ChatMessage, ToolCall

Block = dict[str, Any]


MAX_TOOL_ARGUMENT_BYTES = 64 * 1024  # a core memory line or an archival note fits many times


def tool_call(call_id: str, name: str, raw: str) -> ToolCall:
    """A tool call from its raw arguments, which must be a JSON object (empty: none).
    Arguments that are not, or too large to store with the message, make a call with a
    `problem` instead: a model's slip is answered as a tool reply it can correct, not a
    failed turn."""
    if len(raw.encode()) > MAX_TOOL_ARGUMENT_BYTES:
        return ToolCall(
            call_id,
            name,
            {},
            f"the arguments are too large ({len(raw.encode())} bytes; at most "
            f"{MAX_TOOL_ARGUMENT_BYTES}). Store less at once, in several calls.",
        )
    if not raw.strip():
        return ToolCall(call_id, name, {})
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        return ToolCall(call_id, name, {}, "the arguments are not valid JSON.")
    if not isinstance(arguments, dict):
        return ToolCall(call_id, name, {}, "the arguments must be a JSON object.")
    return ToolCall(call_id, name, arguments)


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
