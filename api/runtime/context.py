"""The context preview: what an agent's next turn would send the model in its first call,
by part, with token counts against the model's window. The turn is put together by the
runtime exactly as a real one (`Runtime.context`): nothing here rebuilds a prompt.

Parts, in the order the model reads them:
- `system`: the system message less what the parts below break out of it (the
  architecture's instructions, warnings, a specialists' paragraph, separators);
- `blocks`: each core memory block as the system message holds it;
- `recent_turns`: the continuity hook's section of the last turns, a message an item;
- `recalled`: what other hooks put in the prompt (memories, messages), with their ids;
- `message`: the person's message about to be sent;
- `tools`: each tool's JSON spec.
The blocks, the recent turns and the recalled items are inside the system message, so the
`system` part counts only what is left of it: the parts add up to `total_tokens`.

Tokens are estimated (a character count over 4, rounded up, per part): no tokenizer of the
providers' ships with us offline, and the estimate is within the spread between providers'
tokenizers for English text. The answer says so (`estimated: true`)."""

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from api.agents.models import Agent
from api.conversations import service as conversations
from api.errors import NotFound
from api.journal.models import RECENT_CONVERSATION, Source
from api.llm.types import ToolSpec
from api.llm.windows import context_window
from api.memory import blocks as block_text
from api.memory.service import BlockView
from api.runtime.request import TurnRequest
from api.runtime.runner import Runtime, TurnContext

CHARS_PER_TOKEN = 4


class SessionNotFound(NotFound):
    code = "session_not_found"


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Item:
    """One entry of a part: a block, a message, a recalled memory, a tool."""

    name: str  # a block's label, a message's role, a tool's name, a source's kind
    text: str
    tokens: int
    id: str | None = None  # a message's or a memory's
    via: str | None = None  # how a recalled item came in


@dataclass(frozen=True)
class Part:
    name: str
    text: str  # what the model reads of it (the tools: their specs, one a line)
    tokens: int
    items: list[Item] = field(default_factory=list)


@dataclass(frozen=True)
class ContextPreview:
    provider: str
    model: str
    architecture: str
    known: bool  # whether the architecture says its prompt before its turn runs
    parts: list[Part]
    context_window: int | None

    @property
    def total_tokens(self) -> int:
        return sum(p.tokens for p in self.parts)

    @property
    def percent_used(self) -> float | None:
        if not self.context_window:
            return None
        return round(100 * self.total_tokens / self.context_window, 2)


async def of_agent(
    runtime: Runtime,
    agent: Agent,
    *,
    session_id: str | None,
    actor_id: str | None,
    prompt: str,
) -> ContextPreview:
    """The context of `agent`'s next turn in `session_id` (a session id, as POST /chat
    takes it, or a conversation's id, as the conversations list shows it; none: outside any
    conversation), spoken by `actor_id` (its owner by default), with `prompt` as the
    person's message. Reads only, in the agent owner's partition."""
    owner = agent.created_by
    conversation_id = ""
    if session_id is not None:
        conversation_id = await _conversation_of(runtime, agent, session_id)
    request = TurnRequest(
        user_email=owner,
        agent_id=agent.agent_id,
        conversation_id=conversation_id,
        actor_id=actor_id or owner,
        session_id=session_id or "",
        prompt=prompt,
    )
    return preview(await runtime.context(request, agent=agent))


async def _conversation_of(runtime: Runtime, agent: Agent, session_id: str) -> str:
    repos = runtime.repos
    found = await conversations.find_session(repos, agent.created_by, agent.agent_id, session_id)
    if found is not None:
        return found.conversation_id
    try:
        conversation = await conversations.get(repos, agent.created_by, session_id)
    except conversations.ConversationNotFound:
        conversation = None
    if conversation is None or conversation.agent_id != agent.agent_id:
        raise SessionNotFound(
            "This agent has no conversation with that session id: leave session_id out to "
            "see the context outside any conversation."
        )
    return conversation.conversation_id


def preview(context: TurnContext) -> ContextPreview:
    turn = context.turn
    agent = turn.agent
    messages = context.messages
    system = messages[0].content if messages is not None else ""
    shown = list(context.architecture.blocks_shown(turn)) if messages is not None else []
    block_items = [_block(view, system) for view in shown]
    recent: list[Item] = []
    recent_text: list[str] = []
    recalled: list[Item] = []
    recalled_text: list[str] = []
    for sections, sources in turn.hooks.added:
        if sources and all(s.via == RECENT_CONVERSATION for s in sources):
            recent_text += sections
            recent += _said(sections, sources)
        elif sources:
            recalled_text += sections
            recalled += [_recalled(s) for s in sources]
    tools = [_tool(spec) for spec in context.tools]
    broken_out = sum(len(t) for t in [*(i.text for i in block_items), *recent_text, *recalled_text])
    own = max(0, len(system) - broken_out)
    parts = [
        Part("system", system, math.ceil(own / CHARS_PER_TOKEN)),
        Part("blocks", "", sum(i.tokens for i in block_items), block_items),
        Part("recent_turns", "\n\n".join(recent_text), _tokens(recent_text), recent),
        Part("recalled", "\n\n".join(recalled_text), _tokens(recalled_text), recalled),
        Part("message", turn.prompt, estimate_tokens(turn.prompt)),
        Part("tools", "\n".join(i.text for i in tools), sum(i.tokens for i in tools), tools),
    ]
    return ContextPreview(
        provider=agent.agent_provider,
        model=agent.agent_model,
        architecture=agent.agent_architecture,
        known=messages is not None,
        parts=parts,
        context_window=context_window(agent.agent_provider, agent.agent_model),
    )


def _tokens(texts: Sequence[str]) -> int:
    return sum(estimate_tokens(t) for t in texts)


def _block(view: BlockView, system: str) -> Item:
    """The block as the system message holds it: seed 000's rendering (numbered lines under
    its heading), or its bare lines where the architecture shows them so (a persona)."""
    rendered = block_text.render_block(view.name, view.description, view.lines)
    if rendered not in system:
        rendered = "\n".join(view.lines)
    return Item(name=view.name, text=rendered, tokens=estimate_tokens(rendered))


def _said(sections: Sequence[str], sources: Sequence[Source]) -> list[Item]:
    """The recent turns' messages, one `role: text` entry each as the section shows them
    (a message's later lines are indented, so an unindented line starts the next)."""
    entries: list[str] = []
    for section in sections:
        for line in section.splitlines()[1:]:  # after its "Recent conversation:" heading
            if line.startswith("  ") and entries:
                entries[-1] += "\n" + line
            else:
                entries.append(line)
    return [
        Item(
            name=entry.split(":", 1)[0],
            text=entry,
            tokens=estimate_tokens(entry),
            id=source.id,
        )
        for entry, source in zip(entries, sources, strict=False)
    ]


def _recalled(source: Source) -> Item:
    return Item(
        name=source.kind,
        text=source.preview or "",
        tokens=estimate_tokens(source.preview or ""),
        id=source.id,
        via=source.via,
    )


def _tool(spec: ToolSpec) -> Item:
    # The spec as every adapter sends it, less each provider's own envelope.
    text = json.dumps(
        {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
        ensure_ascii=False,
    )
    return Item(name=spec.name, text=text, tokens=estimate_tokens(text))
