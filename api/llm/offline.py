"""The offline demo model: deterministic, no network, and useful enough to show the product.

It stores simple facts the user states ("my name is ...", "I live in ...", "I like ...",
"I work at ...") with `core_memory_append`, one tool call per step as MemGPT does, and
answers questions about them from the core memory in its system prompt. Preferences ("I
prefer ...") it only notices: it answers them from the recent conversation in its prompt,
so they are known in that session alone. It says plainly
what it is. Tests use it as a scripted model too: its behaviour is a pure function of the
request.

A memory run (seed 004: a system prompt with `<memory_blocks>` and new messages in
`<new_messages>`) gets another behaviour, still deterministic: in one step it notes what
the messages state (names, places, work, likes and preferences, goals; also what the
assistant says of the person: "you prefer ...") as `Label: value` lines, each in the block
whose label or description fits it best (`human` when none does), then keeps a rolling
summary: one line per run appended to `summary`, the oldest dropped past
SUMMARY_LINES.
"""

import re
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from api.llm.types import (
    ChatMessage,
    ChatRequest,
    Finish,
    LLMEvent,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
)

MODEL = "offline-demo"
APPEND_TOOL = "core_memory_append"
DISCLAIMER = "(I am the offline demo model: I remember simple facts and answer from memory.)"


@dataclass(frozen=True)
class Fact:
    label: str  # as stored in the human block: "Name", "Lives in", ...
    value: str


# What a person states, and the line it becomes in core memory. A fact ends at
# punctuation or where the next clause about the person begins ("... and I work at ...").
_END = r"(?=\s+and\s+(?:i|i'm|my)\b|[,.!?;]|$)"
STATEMENTS = [
    (re.compile(r"\bmy name is ([^,.!?;]+?)" + _END, re.I), "Name"),
    (re.compile(r"\bi(?:'m| am) called ([^,.!?;]+?)" + _END, re.I), "Name"),
    (re.compile(r"\bi live in ([^,.!?;]+?)" + _END, re.I), "Lives in"),
    (re.compile(r"\bi work (?:at|for) ([^,.!?;]+?)" + _END, re.I), "Works at"),
    (re.compile(r"\bi (?:really )?(?:like|love|enjoy) ([^,.!?;]+?)" + _END, re.I), "Likes"),
]

# What a person says that the model notices in the conversation but does not store: it is
# known in that session (through its recent conversation) and nowhere else.
NOTICED = [
    (re.compile(r"\bi (?:prefer|would rather have) ([^,.!?;]+?)" + _END, re.I), "Prefers"),
]

# What a person asks, and the line that answers it.
QUESTIONS = [
    (re.compile(r"\bwhat(?:'s| is) my name\b|\bwho am i\b", re.I), "Name", "Your name is {}."),
    (re.compile(r"\bwhere do i live\b", re.I), "Lives in", "You live in {}."),
    (re.compile(r"\bwhere do i work\b|\bwho do i work for\b", re.I), "Works at", "You work at {}."),
    (re.compile(r"\bwhat (?:\w+ )?do i (?:like|love|enjoy)\b", re.I), "Likes", "You like {}."),
    (re.compile(r"\bwhat (?:\w+ )?do i prefer\b", re.I), "Prefers", "You prefer {}."),
]
RECENT_HEADING = "Recent conversation:"


def facts_in(text: str, patterns: Sequence[tuple[re.Pattern[str], str]] = STATEMENTS) -> list[Fact]:
    found: list[tuple[int, Fact]] = []
    for pattern, label in patterns:
        for match in pattern.finditer(text):
            value = match.group(1).strip().rstrip(".")
            if value:
                found.append(
                    (
                        match.start(),
                        Fact(label, value[:1].upper() + value[1:] if label == "Name" else value),
                    )
                )
    return [fact for _, fact in sorted(found, key=lambda pair: pair[0])]


def remembered(system_prompt: str, label: str) -> list[str]:
    """Values of the core-memory lines `N: {label}: value` in the system prompt."""
    pattern = re.compile(rf"^\s*\d+:\s*{re.escape(label)}:\s*(.+?)\s*$", re.M)
    return pattern.findall(system_prompt)


def said_recently(system_prompt: str, label: str) -> list[str]:
    """Values the user stated in the prompt's recent conversation (seed 001's section)."""
    _, found, section = system_prompt.partition(RECENT_HEADING)
    said = [line.removeprefix("user:") for line in section.splitlines() if line.startswith("user:")]
    values = [
        fact.value
        for line in said
        for fact in facts_in(line, [*STATEMENTS, *NOTICED])
        if fact.label == label
    ]
    return list(dict.fromkeys(values)) if found else []


def _latest_turn(messages: Sequence[ChatMessage]) -> tuple[str, list[ChatMessage]]:
    """The last user message and what followed it (tool calls and their results)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            return messages[i].content, list(messages[i + 1 :])
    return "", []


def reply_to(request: ChatRequest) -> tuple[str, ToolCall | None]:
    """The model's next step: a tool call to make, or the text to answer with."""
    system = "\n".join(m.content for m in request.messages if m.role == "system")
    text, since = _latest_turn(request.messages)
    can_store = any(tool.name == APPEND_TOOL for tool in request.tools)
    facts = facts_in(text)
    stored = sum(1 for m in since if m.role == "assistant" and m.tool_calls)
    if can_store and stored < len(facts):
        fact = facts[stored]
        call = ToolCall(
            id=f"call_{uuid.uuid4().hex[:12]}",
            name=APPEND_TOOL,
            arguments={"block": "human", "content": f"{fact.label}: {fact.value}"},
        )
        return "", call
    if facts:
        return _acknowledge(facts, stored=can_store), None
    for pattern, label, answer in QUESTIONS:
        if pattern.search(text):
            values = remembered(system, label) or said_recently(system, label)
            if values:
                return answer.format(", ".join(values)) + " " + DISCLAIMER, None
            return (f"I don't know that yet. Tell me and I will remember it. {DISCLAIMER}", None)
    return (
        "Hello! I am the offline demo model, running without any network or API key. "
        "Tell me your name, where you live, where you work or what you like, and ask me "
        "about it later. Configure a real provider for real conversations.",
        None,
    )


def _acknowledge(facts: list[Fact], *, stored: bool) -> str:
    names = [f.value for f in facts if f.label == "Name"]
    greeting = f"Nice to meet you, {names[0]}!" if names else "Thanks for telling me!"
    others = [f"{f.label.lower()}: {f.value}" for f in facts if f.label != "Name"]
    if not stored:
        return f"{greeting} {DISCLAIMER}"
    detail = f" I'll remember that ({'; '.join(others)})." if others else " I'll remember that."
    return f"{greeting}{detail} {DISCLAIMER}"


class OfflineProvider:
    name = "offline"

    async def stream(self, request: ChatRequest) -> AsyncIterator[LLMEvent]:
        prompt_words = sum(len(m.content.split()) for m in request.messages)
        planned = memory_reply(request)
        if planned is not None and planned[1]:
            for planned_call in planned[1]:
                yield ToolCallEvent(planned_call)
            yield Usage(prompt_words, 0)
            yield Finish("tool_calls")
            return
        text, call = (planned[0], None) if planned is not None else reply_to(request)
        if call is not None:
            yield ToolCallEvent(call)
            yield Usage(prompt_words, 0)
            yield Finish("tool_calls")
            return
        for word in re.findall(r"\S+\s*", text):
            yield TextDelta(word)
        yield Usage(prompt_words, len(text.split()))
        yield Finish("stop")

    async def aclose(self) -> None:
        return None

    async def list_models(self) -> list[str]:
        return [MODEL]


# --- memory runs (seed 004) ------------------------------------------------------------

# The sections of a memory run's prompt (api/memory_runs/prompt.py writes them).
MEMORY_BLOCKS = "memory_blocks"
NEW_MESSAGES = "new_messages"
SUMMARY_BLOCK = "summary"
SUMMARY_LINES = 5  # the rolling summary keeps this many runs' lines
SUMMARY_CHARS = 300
DELETE_TOOL = "core_memory_delete"

_BLOCK = re.compile(r'<block label="([^"]+)" description="([^"]*)">\n(.*?)</block>', re.S)
_LINE = re.compile(r"^\d+: (.*)$", re.M)
# What the assistant says of the person, and goals whoever states them.
_TOLD = [
    (re.compile(r"\byour name is ([^,.!?;]+?)" + _END, re.I), "Name"),
    (re.compile(r"\byou live in ([^,.!?;]+?)" + _END, re.I), "Lives in"),
    (re.compile(r"\byou work (?:at|for) ([^,.!?;]+?)" + _END, re.I), "Works at"),
    (re.compile(r"\byou (?:prefer|would rather have) ([^,.!?;]+?)" + _END, re.I), "Prefers"),
]
_GOALS = [
    (
        re.compile(
            r"\b(?:the |our |my |your )?(?:main |primary )?goal is (?:to )?([^,!?;]+?)"
            r"(?=\.(?:\s|$)|[,!?;]|$)",
            re.I,
        ),
        "Goal",
    )
]
# Where a fact goes: the first other block whose label or description names one of these.
_FITS = {
    "Name": ("name",),
    "Lives in": ("location", "address", "where they live"),
    "Works at": ("work", "job", "employer", "role"),
    "Likes": ("preference", "like", "interest"),
    "Prefers": ("preference", "prefer"),
    "Goal": ("goal", "project"),
}
_NOT_FOR_FACTS = ("human", SUMMARY_BLOCK, "persona")


@dataclass(frozen=True)
class Block:
    label: str
    description: str
    lines: tuple[str, ...]


def _section(text: str, name: str) -> str | None:
    start, end = f"<{name}>", f"</{name}>"
    if start not in text or end not in text:
        return None
    return text.split(start, 1)[1].split(end, 1)[0]


def memory_blocks(system_prompt: str) -> list[Block] | None:
    """The blocks of a memory run's prompt, in order; None for any other prompt."""
    section = _section(system_prompt, MEMORY_BLOCKS)
    if section is None:
        return None
    return [
        Block(label, description, tuple(_LINE.findall(body)))
        for label, description, body in _BLOCK.findall(section)
    ]


def _said(text: str) -> list[tuple[str, str]]:
    """(role, text) of each line of the new messages."""
    found = []
    for line in text.strip().splitlines():
        role, colon, content = line.partition(": ")
        if colon and role in ("user", "assistant", "system"):
            found.append((role, content.strip()))
    return found


def _home(label: str, blocks: Sequence[Block]) -> str:
    words = _FITS.get(label, ())
    for block in blocks:
        if block.label in _NOT_FOR_FACTS:
            continue
        about = f"{block.label.replace('_', ' ')} {block.description}".lower()
        if any(word in about for word in words):
            return block.label
    return "human"


def _summary_line(said: Sequence[tuple[str, str]]) -> str:
    asked = [text for role, text in said if role == "user"]
    line = f"{len(said)} {'message' if len(said) == 1 else 'messages'}"
    if asked:
        line += ". User: " + " | ".join(asked)
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1].rstrip() + "…"


def memory_plan(blocks: Sequence[Block], said: Sequence[tuple[str, str]]) -> list[ToolCall]:
    """The edits a memory run makes, as tool calls, in order."""
    by_label = {b.label: b for b in blocks}
    facts: list[tuple[str, Fact]] = []
    for role, text in said:
        found = facts_in(text, [*STATEMENTS, *NOTICED]) if role == "user" else facts_in(text, _TOLD)
        found += facts_in(text, _GOALS)
        facts += [(_home(f.label, blocks), f) for f in found]
    calls: list[ToolCall] = []
    planned: set[tuple[str, str]] = set()
    for block, fact in facts:
        line = f"{fact.label}: {fact.value}"
        have = by_label.get(block)
        if (block, line) in planned or (have is not None and line in have.lines):
            continue
        planned.add((block, line))
        calls.append(_call(APPEND_TOOL, {"block": block, "content": line}))
    summary = by_label.get(SUMMARY_BLOCK)
    if summary is not None and said:
        if len(summary.lines) >= SUMMARY_LINES:
            calls.append(_call(DELETE_TOOL, {"block": SUMMARY_BLOCK, "line_number": 1}))
        calls.append(_call(APPEND_TOOL, {"block": SUMMARY_BLOCK, "content": _summary_line(said)}))
    return calls


def _call(name: str, arguments: dict[str, object]) -> ToolCall:
    return ToolCall(id=f"call_{uuid.uuid4().hex[:12]}", name=name, arguments=arguments)


def memory_reply(request: ChatRequest) -> tuple[str, list[ToolCall]] | None:
    """A memory run's next step (all its edits at once, then a line saying what it did),
    or None when the request is not a memory run's."""
    system = "\n".join(m.content for m in request.messages if m.role == "system")
    blocks = memory_blocks(system)
    text, since = _latest_turn(request.messages)
    new = _section(text, NEW_MESSAGES)
    if blocks is None or new is None:
        return None
    done = [m for m in since if m.role == "tool"]
    if done or not request.tools:
        changed = sum(1 for m in done if not m.content.endswith("(no change)"))
        return f"Memory updated: {changed} of {len(done)} edits changed a block.", []
    calls = memory_plan(blocks, _said(new))
    if not calls:
        return "Nothing new to remember.", []
    return "", calls
