"""What a memory run's model reads: instructions, the subject's blocks with their
descriptions (which say what belongs in each), and the new messages."""

from collections.abc import Sequence

from api.kit.text import xml_attribute
from api.llm.offline import MEMORY_BLOCKS, NEW_MESSAGES, SUMMARY_BLOCK
from api.memory.blocks import clean_line
from api.memory.service import BlockView

INSTRUCTIONS = f"""You keep the long-term memory of an assistant about one person. You do not \
talk to anyone: you read the new messages of a conversation below and keep the memory \
blocks current with your core memory tools.

- Each block's description says what belongs in it. Store lasting facts (names, \
preferences, goals, details of the person's situation and work) as short lines, one fact \
per line, in the block whose description fits best; `human` holds what fits no other \
block.
- Keep facts current. When a fact changed (a new name, a move, a new job: "actually, \
call me Bob", "I moved to Porto"), replace its line with core_memory_replace, by the line \
number shown below, instead of appending a second line about the same thing; the block's \
history keeps the old line. Delete what turned out wrong or is no longer true ("I don't \
work there any more") with core_memory_delete. Facts that add up (another thing the \
person likes) are appended. Never store what a block already says.
- Keep `{SUMMARY_BLOCK}` a rolling summary of the conversation so far: a few short lines, \
the newest last; merge or delete older lines to keep it short.
- Small talk needs no memory. When you are done, reply with one line saying what you \
changed."""


def render_blocks(blocks: Sequence[BlockView]) -> str:
    rendered = [
        f'<block label="{b.name}" description="{xml_attribute(b.description)}">\n'
        + "".join(f"{i}: {line}\n" for i, line in enumerate(b.lines, 1))
        + "</block>"
        for b in blocks
    ]
    return f"<{MEMORY_BLOCKS}>\n" + "\n".join(rendered) + f"\n</{MEMORY_BLOCKS}>"


def system_prompt(blocks: Sequence[BlockView]) -> str:
    return f"{INSTRUCTIONS}\n\n{render_blocks(blocks)}"


def new_messages(said: Sequence[tuple[str, str]]) -> str:
    """The messages to process, one per line as `role: text`."""
    lines = [f"{role}: {clean_line(text)}" for role, text in said]
    return f"<{NEW_MESSAGES}>\n" + "\n".join(lines) + f"\n</{NEW_MESSAGES}>"
