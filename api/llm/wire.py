"""Helpers every wire-format adapter shares."""

import json
from collections.abc import Mapping
from typing import Any

from api.llm.errors import ProviderBadResponse


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
