"""A one-way importer from Letta's agent file (`.af`, as Letta's V1 server writes it: its
`AgentFileSchema`, one JSON document with `agents`, `blocks`, `tools`, ... and ids like
`agent-0` that only mean something inside the file).

Each agent of the file becomes our records, checked and written as an export file's are:
- its blocks become core-memory blocks: the label normalized to a block name (`human` and
  `persona` stay what they are), Letta's character limit converted to a word limit
  (CHARS_PER_WORD), the value one line per line;
- its messages become one conversation, in their order; Letta's system messages (its own
  prompt, which our architecture builds anew) are left out;
- its tools, MCP servers, files and sources are left out and reported: we never run code or
  reach servers a file names.
"""

import hashlib
import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from api.conversations.messages.models import Role
from api.kit.model import ApiModel
from api.memory import blocks
from api.memory.service import MAX_DESCRIPTION_CHARS
from api.transfer.checker import refuse
from api.transfer.format import (
    AgentRecord,
    BlockRecord,
    ConversationRecord,
    MessageRecord,
    Record,
)

CHARS_PER_WORD = 6  # an English word and its space, on average
MAX_FILE_BYTES = 256 * 1024 * 1024  # one JSON document, parsed whole
LETTA_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
PROVIDER_OF = {"openai": "openai", "anthropic": "anthropic", "bedrock": "bedrock"}
ROLE_OF: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}


class _Loose(ApiModel):
    model_config = ConfigDict(extra="ignore")


class LettaBlock(_Loose):
    id: str
    label: str | None = None
    value: str = ""
    limit: int | None = None
    description: str | None = None


class LettaFunction(_Loose):
    name: str = ""
    arguments: str = ""


class LettaToolCall(_Loose):
    id: str = ""
    function: LettaFunction = Field(default_factory=LettaFunction)


class LettaMessage(_Loose):
    id: str
    role: str
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[LettaToolCall] | None = None
    tool_call_id: str | None = None
    created_at: datetime | None = None


class LettaLLMConfig(_Loose):
    model: str | None = None
    model_endpoint_type: str | None = None


class LettaAgent(_Loose):
    id: str
    name: str = "Letta agent"
    description: str | None = None
    block_ids: list[str] = Field(default_factory=list)
    tool_ids: list[str] = Field(default_factory=list)
    messages: list[LettaMessage] = Field(default_factory=list)
    llm_config: LettaLLMConfig | None = None


class LettaTool(_Loose):
    id: str
    name: str | None = None


class AgentFile(_Loose):
    agents: list[LettaAgent]
    blocks: list[LettaBlock] = Field(default_factory=list)
    tools: list[LettaTool] = Field(default_factory=list)
    groups: list[Any] = Field(default_factory=list)
    files: list[Any] = Field(default_factory=list)
    sources: list[Any] = Field(default_factory=list)
    mcp_servers: list[Any] = Field(default_factory=list)
    created_at: datetime | None = None


@dataclass
class Converted:
    """One agent of the file as our records, and what was left out of it."""

    source_agent_id: str
    records: list[Record]
    left_out: list[tuple[str, str, int]] = field(default_factory=list)  # kind, reason, count


def parse(data: bytes) -> AgentFile:
    """The file, or InvalidImportFile saying why it is not a Letta agent file."""
    try:
        value = json.loads(data)
    except ValueError:
        raise refuse(
            None, "The file is neither an agent-memory export nor a Letta agent file (.af)."
        ) from None
    except RecursionError:
        raise refuse(None, "The file is nested too deeply to be read as JSON.") from None
    if isinstance(value, dict) and "agents" not in value and "core_memory" in value:
        raise refuse(
            None,
            "This is a Letta agent file of the old layout (before Letta's V1 server, with "
            "`core_memory` at the top); export it again from a Letta V1 server.",
        )
    try:
        parsed = AgentFile.model_validate(value)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise refuse(None, f"Not a Letta agent file: {where}: {first['msg']}.") from None
    if not parsed.agents:
        raise refuse(None, "The Letta agent file holds no agent.")
    return parsed


def _lines(value: str) -> list[str]:
    """A block's value as our lines: one per line, long lines cut at word boundaries."""
    out: list[str] = []
    for raw in value.splitlines():
        line = blocks.clean_line(raw)
        while len(line) > blocks.MAX_LINE_CHARS:
            cut = line.rfind(" ", 0, blocks.MAX_LINE_CHARS + 1)
            cut = cut if cut > 0 else blocks.MAX_LINE_CHARS
            out.append(line[:cut].strip())
            line = line[cut:].strip()
        if line:
            out.append(line)
    return list(dict.fromkeys(out))


def word_limit(char_limit: int | None, lines: list[str]) -> int:
    """Letta's character limit as words, never below what the block already holds."""
    words = math.ceil((char_limit or 5000) / CHARS_PER_WORD)
    return max(1, min(blocks.MAX_WORD_LIMIT, max(words, blocks.count_words(lines))))


def _utc(moment: datetime) -> datetime:
    """Letta writes UTC; a time without a zone is read as UTC, never as this machine's."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(
        str(part.get("text", "")) for part in content if part.get("type") == "text"
    ).strip()


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except (ValueError, RecursionError):
        return {"text": text}
    return value if isinstance(value, dict) else {"value": value}


def _call(call: LettaToolCall) -> dict[str, Any]:
    """A tool call as our messages store them (its arguments an object, not JSON text)."""
    return {
        "id": call.id,
        "name": call.function.name,
        "arguments": _arguments(call.function.arguments),
    }


def convert(parsed: AgentFile, digest: str) -> list[Converted]:
    """Every agent of the file as our records. `digest` (the file's SHA-256) makes the
    source ids: Letta's `agent-0` is only unique inside one file."""
    blocks_by_id = {b.id: b for b in parsed.blocks}
    tools_by_id = {t.id: t for t in parsed.tools}
    out: list[Converted] = []
    for agent in parsed.agents:
        source_id = f"letta-{digest[:16]}-{agent.id}"
        converted = Converted(source_id, [])
        left = converted.left_out
        created = min((m.created_at for m in agent.messages if m.created_at), default=LETTA_EPOCH)
        persona = ""
        block_records: list[Record] = []
        names: set[str] = set()
        for block_id in agent.block_ids:
            block = blocks_by_id.get(block_id)
            name = blocks.normalize_block_name(block.label or "") if block else ""
            if block is None or not blocks.is_valid_block_name(name) or name in names:
                left.append(("block", f"{block_id!r}: missing, unnamed or named twice", 1))
                continue
            names.add(name)
            lines = _lines(block.value)
            if name == "persona":
                persona = "\n".join(lines)
            block_records.append(
                BlockRecord(
                    name=name,
                    description=blocks.clean_line(block.description or "")[:MAX_DESCRIPTION_CHARS],
                    word_limit=word_limit(block.limit, lines),
                    is_default=name in ("human", "persona"),
                    lines=lines,
                    created_at=created,
                )
            )
        config = agent.llm_config or LettaLLMConfig()
        provider = PROVIDER_OF.get(config.model_endpoint_type or "")
        converted.records.append(
            AgentRecord(
                agent_id=source_id,
                name=blocks.clean_line(agent.name)[:100] or "Letta agent",
                architecture="krishna-memgpt",
                provider=provider or "offline",
                model=(config.model or "offline-demo") if provider else "offline-demo",
                persona=persona,
                event_expiry_days=0,  # what Letta kept, kept: no expiry
                recent_turns=10,
                metadata={"imported_from": "letta", "letta_agent_id": agent.id},
                created_at=created,
                updated_at=created,
            )
        )
        converted.records += block_records
        converted.records += _conversation(agent, source_id, created, left)
        tools = [tools_by_id[t].name or t for t in agent.tool_ids if t in tools_by_id]
        if tools:
            left.append(
                ("tool", f"imported code is never run: {', '.join(sorted(tools))}", len(tools))
            )
        for kind in ("groups", "files", "sources", "mcp_servers"):
            count = len(getattr(parsed, kind))
            if count:
                left.append((kind, "Letta's, with no counterpart here", count))
        out.append(converted)
    return out


def _conversation(
    agent: LettaAgent, source_id: str, created: datetime, left: list[tuple[str, str, int]]
) -> list[Record]:
    if not agent.messages:
        return []
    conversation_id = f"{source_id}-messages"
    records: list[Record] = [
        ConversationRecord(
            conversation_id=conversation_id,
            title=f"Imported from Letta: {agent.name}"[:200],
            created_at=created,
            updated_at=max(
                (_utc(m.created_at) for m in agent.messages if m.created_at), default=created
            ),
        )
    ]
    system = 0
    for number, message in enumerate(agent.messages):
        role = ROLE_OF.get(message.role)
        if role is None:
            system += message.role == "system"
            if message.role != "system":
                left.append(("message", f"role {message.role!r} has no counterpart here", 1))
            continue
        # Our message ids order messages of the same instant: the file's order, kept.
        at = _utc(message.created_at) if message.created_at else created
        records.append(
            MessageRecord(
                conversation_id=conversation_id,
                message_id=f"{number:06d}-{hashlib.sha256(message.id.encode()).hexdigest()[:16]}",
                role=role,
                content=_text(message.content),
                tool_calls=[
                    {
                        "id": c.id,
                        "name": c.function.name,
                        "arguments": _arguments(c.function.arguments),
                    }
                    for c in message.tool_calls or []
                ],
                tool_call_id=message.tool_call_id,
                created_at=at,
            )
        )
    if system:
        left.append(("message", "Letta's system prompt: our architecture writes its own", system))
    return records
