"""The offline demo model: deterministic, no network, and useful enough to show the product.

It stores simple facts the user states ("my name is ...", "I live in ...", "I like ...",
"I work at ...") with `core_memory_append`, one tool call per step as MemGPT does, and
answers questions about them from the core memory in its system prompt ("what do you
remember about me?" gets all of it). A question about a topic ("what do you remember
about my trip to Rome?") it looks up with the agent's search tool (`archival_memory_search`,
or seed 003's `search_memories`) and answers from what the search found. Anything else it
says plainly it cannot do. Preferences ("I prefer ...") it only notices: it answers them
from the recent conversation in its prompt, so they are known in that session alone. It
says plainly what it is. Tests use it as a scripted model too: its behaviour is a pure
function of the request.

Facts stay current: a name, a home or an employer (SINGLE_VALUED) said again replaces its
line with `core_memory_replace` (the line number read from the numbered lines of its
prompt) instead of adding a second one; likes add up. It understands the usual ways people
correct themselves: "Actually, call me Bob", "I moved to Porto", "I live in Porto now, not
Lisbon any more", "I don't work at Acme any more" (that line is deleted). Offered only
`core_memory_append`, it appends as before.

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
from collections.abc import AsyncIterator, Collection, Sequence
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
REPLACE_TOOL = "core_memory_replace"
DELETE_TOOL = "core_memory_delete"
# Labels with one value at a time: a new one replaces the old. Others ("Likes") add up.
SINGLE_VALUED = ("Name", "Lives in", "Works at")
DISCLAIMER = "(I am the offline demo model: I remember simple facts and answer from memory.)"


@dataclass(frozen=True)
class Fact:
    label: str  # as stored in the human block: "Name", "Lives in", ...
    value: str


# What a person states, and the line it becomes in core memory. A fact ends at
# punctuation or where the next clause about the person begins ("... and I work at ...").
_END = r"(?=\s+and\s+(?:i|i'm|my)\b|[,.!?;]|$)"
_NOW = r"(?:now |currently |actually )?"
_NOT = r"(?:don't|do not|no longer|not)"
# "call me" names only when what follows reads as a name: not "call me back", "call me
# when ...", and never after "don't" or "not".
_CALL_ME = (
    r"(?<!n't )(?<!not )\bcall me "
    r"(?!(?:back|later|when|if|at|on|in|tomorrow|tonight|now|again|please|anytime|a|an|the)\b)"
    r"([A-Za-z][\w'-]*(?: [A-Za-z][\w'-]*){0,2})"
)
_CALL_END = r"(?=\s+(?:please|from now on|instead|and)\b|[,.!?;]|$)"
STATEMENTS = [
    (re.compile(r"\bmy name is ([^,.!?;]+?)" + _END, re.I), "Name"),
    (re.compile(r"\bi(?:'m| am) called ([^,.!?;]+?)" + _END, re.I), "Name"),
    (re.compile(_CALL_ME + _CALL_END, re.I), "Name"),
    (re.compile(rf"\bi {_NOW}live in ([^,.!?;]+?)" + _END, re.I), "Lives in"),
    (
        re.compile(r"\bi(?:'ve| have)? (?:just |recently )?moved to ([^,.!?;]+?)" + _END, re.I),
        "Lives in",
    ),
    (re.compile(rf"\bi {_NOW}work (?:at|for) ([^,.!?;]+?)" + _END, re.I), "Works at"),
    (re.compile(r"\bi (?:really )?(?:like|love|enjoy) ([^,.!?;]+?)" + _END, re.I), "Likes"),
]

# What a person says is no longer true: (the label, or None for any label's line) and the
# value. "I don't live in Lisbon any more", "not Lisbon any more".
RETRACTIONS = [
    (re.compile(rf"\bi {_NOT} live in ([^,.!?;]+?)" + _END, re.I), "Lives in"),
    (re.compile(rf"\bi {_NOT} work (?:at|for) ([^,.!?;]+?)" + _END, re.I), "Works at"),
    (re.compile(rf"\bi {_NOT} (?:like|love|enjoy) ([^,.!?;]+?)" + _END, re.I), "Likes"),
    (re.compile(r"\bnot (?:in |at |for )?([^,.!?;]+?) any ?(?:more|longer)\b", re.I), None),
]
# Words that end a value without being part of it: "Porto now", "Acme any more", "Berlin
# last week".
_TRAILING = re.compile(
    r"\s+(?:now|these days|nowadays|any ?more|any longer|recently|yesterday|today"
    r"|(?:last|this) (?:week|month|year))$",
    re.I,
)

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
# "What do you remember about me?" and the like: everything in the human block.
RECALL = re.compile(
    r"\bwhat (?:do|did) you (?:remember|know|recall) (?:about|of) me\b"
    r"|\bwhat have you (?:remembered|learned|learnt|saved|stored)\b"
    r"|\bwhat(?:'s| is) in your memory\b|\btell me what you (?:know|remember)\b",
    re.I,
)
# A question about a topic, answered from archival memory through the agent's search tool
# ("what do you remember about my trip to Rome?", "do you recall the coffee?", "search your
# memory for Rome"): one search, then an answer from what it found.
TOPIC = re.compile(
    r"\b(?:what (?:do|did) you (?:remember|know|recall) (?:about|of)"
    r"|what did i (?:tell|say to) you about"
    r"|do you (?:remember|recall)(?: anything (?:about|of))?"
    r"|search (?:your |the )?(?:archival )?memory for)"
    r"\s+(?:my |the |a |an |our )?(?P<topic>[^?!.;]+)",
    re.I,
)
NOT_A_TOPIC = {"me", "myself", "us", "it", "that", "this", "anything", "everything"}
SEARCH_TOOLS = ("archival_memory_search", "search_memories")  # seed 000's, seed 003's
# A hit in their replies (api/tools/native): "[1] (2025-01-02) Drinks dark roast coffee",
# "- [fact] Drinks dark roast coffee".
_FOUND = re.compile(r"^(?:\[\d+\] \(\d{4}-\d{2}-\d{2}\)|- \[[\w-]+\]) (.+)$", re.M)
# A greeting, answered with the introduction; anything else it does not understand is
# said plainly to be beyond it.
GREETING = re.compile(r"^\s*(?:hi|hello|hey|good (?:morning|afternoon|evening)|howdy)\b", re.I)
INTRODUCTION = (
    "Hello! I am the offline demo model, running without any network or API key. "
    "Tell me your name, where you live, where you work or what you like, and ask me "
    "about it later. Configure a real provider for real conversations."
)
CANNOT = (
    "I can't help with that: I am the offline demo model, with no network and no real "
    "language model. I only remember simple facts you tell me (your name, where you live, "
    'where you work, what you like) and answer questions about them, such as "what do '
    'you remember about me?". Configure a provider in Providers for real conversations.'
)


def _value(text: str) -> str:
    value = text.strip().rstrip(".")
    while (trimmed := _TRAILING.sub("", value)) != value:
        value = trimmed
    return value


def facts_in(text: str, patterns: Sequence[tuple[re.Pattern[str], str]] = STATEMENTS) -> list[Fact]:
    found: list[tuple[int, Fact]] = []
    for pattern, label in patterns:
        for match in pattern.finditer(text):
            value = _value(match.group(1))
            if value:
                found.append(
                    (
                        match.start(),
                        Fact(label, value[:1].upper() + value[1:] if label == "Name" else value),
                    )
                )
    return [fact for _, fact in sorted(found, key=lambda pair: pair[0])]


def retractions_in(text: str) -> list[tuple[str | None, str]]:
    """What the text says is no longer true, in the order it says it: (label, or None for a
    line of any label, value)."""
    found: list[tuple[int, str | None, str]] = []
    for pattern, label in RETRACTIONS:
        for match in pattern.finditer(text):
            value = _value(match.group(1))
            if value:
                found.append((match.start(), label, value))
    return [(label, value) for _, label, value in sorted(found, key=lambda f: f[0])]


Edit = tuple[str, dict[str, object]]  # a tool's name and its arguments


def _label_of(line: str) -> str:
    label, colon, _ = line.partition(": ")
    return label if colon else ""


def note(lines: list[str], block: str, fact: Fact, tools: Collection[str]) -> list[Edit]:
    """The edits that put `fact` in `block`, whose lines are `lines` (updated as the edits
    will leave them): a single-valued label's line is replaced, and any more lines of that
    label deleted; otherwise the line is appended (a line already there changes nothing)."""
    line = f"{fact.label}: {fact.value}"
    same = [i for i, have in enumerate(lines) if _label_of(have) == fact.label]
    if fact.label not in SINGLE_VALUED or not same or line in lines or REPLACE_TOOL not in tools:
        if line not in lines:
            lines.append(line)
        return [(APPEND_TOOL, {"block": block, "content": line})]
    first, *others = same
    lines[first] = line
    edits: list[Edit] = [
        (REPLACE_TOOL, {"block": block, "line_number": first + 1, "new_content": line})
    ]
    if DELETE_TOOL in tools:
        for i in reversed(others):
            del lines[i]
            edits.append((DELETE_TOOL, {"block": block, "line_number": i + 1}))
    return edits


def forget(
    lines: list[str], block: str, label: str | None, value: str, tools: Collection[str]
) -> list[Edit]:
    """The edit that deletes the line saying `label: value` (any label the model writes,
    when None), if `block` has one; `lines` updated."""
    labels = (label,) if label else (*SINGLE_VALUED, "Likes")
    for i, have in enumerate(lines):
        found, _, said = have.partition(": ")
        if found in labels and said.casefold() == value.casefold() and DELETE_TOOL in tools:
            del lines[i]
            return [(DELETE_TOOL, {"block": block, "line_number": i + 1})]
    return []


_CORE_HEADING = re.compile(r"^\[(?P<title>[^\]]+?)(?: - [^\]]*)?\]$")


def block_lines(system_prompt: str, block: str = "human") -> list[str]:
    """The numbered lines of one block of the prompt's `<core_memory>` (seed 000's section),
    in order; none when the prompt has no such block."""
    section = _section(system_prompt, "core_memory") or ""
    for chunk in section.strip("\n").split("\n\n"):
        heading, _, body = chunk.partition("\n")
        title = _CORE_HEADING.match(heading.strip())
        if title and title["title"].strip().lower().replace(" ", "_") == block:
            return _LINE.findall(body)
    return []


def chat_plan(system_prompt: str, text: str, tools: Collection[str]) -> list[Edit]:
    """The edits a chat turn makes of what the user said in `text`, in order: one per step."""
    if APPEND_TOOL not in tools:
        return []
    lines = block_lines(system_prompt)
    edits: list[Edit] = []
    for fact in facts_in(text):
        edits += note(lines, "human", fact, tools)
    for label, value in retractions_in(text):
        edits += forget(lines, "human", label, value, tools)
    return edits


def remembered(system_prompt: str, label: str) -> list[str]:
    """Values of the core-memory lines `N: {label}: value` in the system prompt."""
    pattern = re.compile(rf"^\s*\d+:\s*{re.escape(label)}:\s*(.+?)\s*$", re.M)
    return pattern.findall(system_prompt)


def said_recently(system_prompt: str, label: str) -> list[str]:
    """Values the user stated in the prompt's recent conversation (seed 001's section), as
    they stand after it: a single-valued label's latest, without what was said to be no
    longer true."""
    _, found, section = system_prompt.partition(RECENT_HEADING)
    said = [line.removeprefix("user:") for line in section.splitlines() if line.startswith("user:")]
    values: list[str] = []
    for line in said:
        for fact in facts_in(line, [*STATEMENTS, *NOTICED]):
            if fact.label == label:
                values = [fact.value] if label in SINGLE_VALUED else [*values, fact.value]
        for retracted, value in retractions_in(line):
            if retracted in (label, None):
                values = [v for v in values if v.casefold() != value.casefold()]
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
    tools = {tool.name for tool in request.tools}
    can_store = APPEND_TOOL in tools
    facts = facts_in(text)
    plan = chat_plan(system, text, tools)
    stored = sum(1 for m in since if m.role == "assistant" and m.tool_calls)
    if stored < len(plan):
        return "", _call(*plan[stored])
    corrected = any(name != APPEND_TOOL for name, _ in plan)
    if facts or retractions_in(text):
        return _acknowledge(facts, stored=can_store, corrected=corrected), None
    if RECALL.search(text):
        return recall(block_lines(system)), None
    for pattern, label, answer in QUESTIONS:
        if pattern.search(text):
            values = remembered(system, label) or said_recently(system, label)
            if values:
                return answer.format(", ".join(values)) + " " + DISCLAIMER, None
            return (f"I don't know that yet. Tell me and I will remember it. {DISCLAIMER}", None)
    topic = topic_of(text)
    searcher = next((name for name in SEARCH_TOOLS if name in tools), None)
    searches = {c.id for m in since for c in m.tool_calls if c.name in SEARCH_TOOLS}
    searched = [m.content for m in since if m.role == "tool" and m.tool_call_id in searches]
    if topic and searched:
        return from_archive(topic, searched[-1]), None
    if topic and searcher:
        return "", _call(searcher, {"query": topic})
    noticed = facts_in(text, NOTICED)
    if noticed:
        said = "; ".join(f"{f.label.lower()}: {f.value}" for f in noticed)
        return f"Noted ({said}), for this conversation. {DISCLAIMER}", None
    if GREETING.search(text) or not text.strip():
        return INTRODUCTION, None
    return CANNOT, None


def topic_of(text: str) -> str | None:
    """What a question asks the archive about, if it asks about a topic (not about "me")."""
    match = TOPIC.search(text)
    if match is None:
        return None
    topic = " ".join(match["topic"].split())
    return None if not topic or topic.lower() in NOT_A_TOPIC else topic


def from_archive(topic: str, reply: str) -> str:
    """The answer from a search tool's reply: the memories it found, or that it found none."""
    found = [_sentence(row) for row in _FOUND.findall(reply)]
    if not found:
        return f"I found nothing about {topic} in my archival memory. {DISCLAIMER}"
    return f"From my archival memory: {'; '.join(found)}. {DISCLAIMER}"


def _sentence(row: str) -> str:
    """A hit without its closing full stop (its "..." kept as one character)."""
    row = row.strip()
    return row[:-3].rstrip() + "…" if row.endswith("...") else row.rstrip(".")


def recall(lines: Sequence[str]) -> str:
    """Everything the human block holds, as the answer to "what do you remember about me?"."""
    if not lines:
        return (
            "I don't remember anything about you yet. Tell me your name, where you live, "
            f"where you work or what you like. {DISCLAIMER}"
        )
    return "Here is what I remember about you: " + "; ".join(lines) + f". {DISCLAIMER}"


def _acknowledge(facts: list[Fact], *, stored: bool, corrected: bool = False) -> str:
    names = [f.value for f in facts if f.label == "Name"]
    others = [f"{f.label.lower()}: {f.value}" for f in facts if f.label != "Name"]
    if corrected:
        greeting = f"Got it, {names[-1]}!" if names else "Got it!"
        detail = (
            f" I've updated my memory ({'; '.join(others)})."
            if others
            else (" I've updated my memory.")
        )
        return f"{greeting}{detail} {DISCLAIMER}"
    if not facts:  # only what is no longer true, and memory did not say it
        return f"Got it! {DISCLAIMER}"
    greeting = f"Nice to meet you, {names[0]}!" if names else "Thanks for telling me!"
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
MEMORY_TOOLS = (APPEND_TOOL, REPLACE_TOOL, DELETE_TOOL)

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


def memory_plan(
    blocks: Sequence[Block],
    said: Sequence[tuple[str, str]],
    tools: Collection[str] = MEMORY_TOOLS,
) -> list[ToolCall]:
    """The edits a memory run makes, as tool calls, in order: message by message, what it
    states (a changed name, home or employer replaces its line), then what it says is no
    longer true (deleted where a block says it)."""
    by_label = {b.label: b for b in blocks}
    lines = {b.label: list(b.lines) for b in blocks}
    edits: list[Edit] = []
    for role, text in said:
        found = facts_in(text, [*STATEMENTS, *NOTICED]) if role == "user" else facts_in(text, _TOLD)
        found += facts_in(text, _GOALS)
        for fact in found:
            block = _home(fact.label, blocks)
            have = lines.setdefault(block, [])
            if f"{fact.label}: {fact.value}" not in have:
                edits += note(have, block, fact, tools)
        for label, value in retractions_in(text) if role == "user" else []:
            homes = [_home(label, blocks)] if label else list(lines)
            for block in homes:
                if block not in (SUMMARY_BLOCK, "persona"):
                    edits += forget(lines.setdefault(block, []), block, label, value, tools)
    calls = [_call(name, arguments) for name, arguments in edits]
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
    calls = memory_plan(blocks, _said(new), {tool.name for tool in request.tools})
    if not calls:
        return "Nothing new to remember.", []
    return "", calls
