"""Anthropic's messages.create (sync, async, streamed) and messages.stream() inside
learning(): the memory goes in `system`, the reply's text and tool_use blocks are stored."""

import asyncio

import anthropic
from anthropic import Anthropic, AsyncAnthropic

from client import learning
from client.formatting import HEADER
from tests.client.conftest import ask_claude
from tests.client.server_process import MemoryServer
from tests.client.test_streams import wait_for_disconnect
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript

STORY = "The lighthouse keeper wrote every ship's name in a thick green book."


def remember(server: MemoryServer, agent: str, claude: Anthropic, fact: str) -> None:
    with learning(agent, server_url=server.url):
        claude.messages.create(model="claude-x", max_tokens=50, messages=ask_claude(fact))


def test_create_puts_the_memory_in_system_and_stores_the_reply(
    server: MemoryServer, agent: str, claude: Anthropic, fake_anthropic: FakeLLM
) -> None:
    remember(server, agent, claude, "I work as a lighthouse keeper.")
    call = ToolCallScript("log_ship", '{"name": "Aurora"}', id="toolu_1")
    fake_anthropic.replies.append(Reply(text="Logging it.", tool_calls=[call]))

    with learning(agent, server_url=server.url):
        answer = claude.messages.create(
            model="claude-x",
            max_tokens=50,
            system="You are terse.",
            messages=ask_claude("Where do I work as a keeper? Log the Aurora."),
        )

    assert [block.type for block in answer.content] == ["text", "tool_use"]
    system = fake_anthropic.requests[-1]["system"]
    assert system.startswith("You are terse.\n\n" + HEADER)
    assert "lighthouse keeper" in system
    stored = server.messages(agent)[-2:]
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "Where do I work as a keeper? Log the Aurora."),
        ("assistant", 'Logging it.\n[tool call] log_ship({"name":"Aurora"})'),
    ]
    assert stored[1]["metadata"]["api"] == "anthropic.messages"
    assert stored[1]["metadata"]["model"] == "claude-x"


def test_a_system_given_as_blocks_gets_one_more_block(
    server: MemoryServer, agent: str, claude: Anthropic, fake_anthropic: FakeLLM
) -> None:
    remember(server, agent, claude, "My parrot is called Kiwi.")

    with learning(agent, server_url=server.url):
        claude.messages.create(
            model="claude-x",
            max_tokens=50,
            system=[{"type": "text", "text": "Be kind."}],
            messages=ask_claude("What is my parrot called?"),
        )

    system = fake_anthropic.requests[-1]["system"]
    assert system[0] == {"type": "text", "text": "Be kind."}
    assert system[1]["type"] == "text"
    assert "Kiwi" in system[1]["text"]


def test_create_with_stream_true_is_captured_when_read(
    server: MemoryServer, agent: str, claude: Anthropic, fake_anthropic: FakeLLM
) -> None:
    fake_anthropic.replies.append(Reply(text=STORY))

    with learning(agent, server_url=server.url, capture_only=True):
        events = claude.messages.create(
            model="claude-x", max_tokens=50, messages=ask_claude("A story."), stream=True
        )
        assert type(events) is anthropic.Stream
        for _ in events:
            pass

    assert server.said(agent) == [("user", "A story."), ("assistant", STORY)]


def test_messages_stream_is_captured(
    server: MemoryServer, agent: str, claude: Anthropic, fake_anthropic: FakeLLM
) -> None:
    remember(server, agent, claude, "My lighthouse is on Texel.")
    fake_anthropic.replies.append(Reply(text=STORY))

    with (
        learning(agent, server_url=server.url),
        claude.messages.stream(
            model="claude-x", max_tokens=50, messages=ask_claude("Where is my lighthouse?")
        ) as stream,
    ):
        text = "".join(stream.text_stream)

    assert text == STORY
    assert "Texel" in fake_anthropic.requests[-1]["system"]
    assert server.said(agent)[-2:] == [("user", "Where is my lighthouse?"), ("assistant", STORY)]


def test_messages_stream_closed_early_is_interrupted(
    server: MemoryServer, agent: str, claude: Anthropic, fake_anthropic: FakeLLM
) -> None:
    # message_start, ping, content_block_start, "The", " lighthouse"; then it hangs.
    fake_anthropic.replies.append(Reply(text=STORY, stall_after_chunks=5))

    with (
        learning(agent, server_url=server.url, capture_only=True),
        claude.messages.stream(
            model="claude-x", max_tokens=50, messages=ask_claude("Story?")
        ) as stream,
    ):
        pieces = [next(stream.text_stream) for _ in range(2)]
    wait_for_disconnect(fake_anthropic)

    assert pieces == ["The", " lighthouse"]
    (reply,) = [m for m in server.messages(agent) if m["role"] == "assistant"]
    assert (reply["content"], reply["metadata"]["interrupted"]) == ("The lighthouse", True)


async def test_async_create_and_async_stream(
    server: MemoryServer, agent: str, aclaude: AsyncAnthropic, fake_anthropic: FakeLLM
) -> None:
    async with learning(agent, server_url=server.url):
        await aclaude.messages.create(
            model="claude-x", max_tokens=50, messages=ask_claude("My boat is a yawl.")
        )
    fake_anthropic.replies += [Reply(text="A yawl."), Reply(text="Still a yawl.")]

    async with learning(agent, server_url=server.url) as memory:
        events = await aclaude.messages.create(
            model="claude-x", max_tokens=50, messages=ask_claude("What is my boat?"), stream=True
        )
        assert type(events) is anthropic.AsyncStream
        async for _ in events:
            pass
        first_system = fake_anthropic.requests[-1]["system"]
        async with aclaude.messages.stream(
            model="claude-x", max_tokens=50, messages=ask_claude("Which boat is mine?")
        ) as stream:
            final = await stream.get_final_text()

    assert "yawl" in first_system
    assert "yawl" in fake_anthropic.requests[-1]["system"]
    assert final == "Still a yawl."
    assert memory.stored == 4
    assert server.said(agent)[-4:] == [
        ("user", "What is my boat?"),
        ("assistant", "A yawl."),
        ("user", "Which boat is mine?"),
        ("assistant", "Still a yawl."),
    ]


async def test_async_stream_closed_early_is_interrupted(
    server: MemoryServer, agent: str, aclaude: AsyncAnthropic, fake_anthropic: FakeLLM
) -> None:
    fake_anthropic.replies.append(Reply(text=STORY, stall_after_chunks=4))

    async with (
        learning(agent, server_url=server.url, capture_only=True),
        aclaude.messages.stream(
            model="claude-x", max_tokens=50, messages=ask_claude("Story?")
        ) as stream,
    ):
        first = await stream.text_stream.__anext__()
    await asyncio.to_thread(wait_for_disconnect, fake_anthropic)

    assert first == "The"
    (reply,) = [m for m in server.messages(agent) if m["role"] == "assistant"]
    assert (reply["content"], reply["metadata"]["interrupted"]) == ("The", True)
