"""Seed 002's "Context Formatting": what POST /context answered, as the text of the system
message (or instructions) put before the model's request."""

from collections.abc import Iterable
from typing import Any

HEADER = "The following is context from your memory:"
MAX_MESSAGE_CHARS = 500
ROLES = {"user": "User", "assistant": "Assistant", "system": "System"}


def format_context(context: dict[str, Any]) -> str | None:
    """The memory to inject, or None when the server had nothing (no block holding text,
    no relevant message). Past messages are cut after 500 characters and shown in the
    order they were said, so that a question and its answer read as a conversation."""
    sections: list[str] = []
    blocks = [
        (str(b.get("label", "")), str(b.get("value", "")).strip())
        for b in _objects(context.get("memory_blocks"))
    ]
    if filled := [(label, value) for label, value in blocks if value]:
        sections.append(
            "## Memory\n\n" + "\n\n".join(f"### {label}\n{value}" for label, value in filled)
        )
    messages = sorted(
        (
            m
            for m in _objects(context.get("relevant_messages"))
            if str(m.get("content", "")).strip()
        ),
        key=lambda m: str(m.get("created_at") or ""),
    )
    if messages:
        said = (
            f"**{ROLES.get(str(m.get('role')), str(m.get('role')).title())}**: "
            f"{clip(str(m['content']).strip())}"
            for m in messages
        )
        sections.append("## Relevant Past Conversations\n\n" + "\n\n".join(said))
    if not sections:
        return None
    return HEADER + "\n\n" + "\n\n".join(sections)


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def _objects(value: object) -> Iterable[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]
