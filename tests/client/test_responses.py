"""The OpenAI Responses API inside learning(): the memory goes in `instructions`, the
reply is `output_text` (and the function calls of `output`)."""

from openai import AsyncOpenAI, OpenAI
from openai.types.responses import ResponseInputParam

from client import learning
from client.formatting import HEADER
from tests.client.server_process import MemoryServer
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript


def remember(server: MemoryServer, agent: str, oai: OpenAI, fact: str) -> None:
    with learning(agent, server_url=server.url):
        oai.responses.create(model="m", input=fact)


def test_a_string_input_gets_the_memory_in_its_instructions(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    remember(server, agent, oai, "My sister is called Ines.")
    fake_openai.replies.append(Reply(text="Your sister is Ines."))

    with learning(agent, server_url=server.url):
        answer = oai.responses.create(model="m", input="What is my sister called?")

    assert answer.output_text == "Your sister is Ines."
    sent = fake_openai.requests[-1]
    assert sent["input"] == "What is my sister called?"
    assert sent["instructions"].startswith(HEADER)
    assert "My sister is called Ines." in sent["instructions"]
    assert server.said(agent)[-2:] == [
        ("user", "What is my sister called?"),
        ("assistant", "Your sister is Ines."),
    ]


def test_the_callers_instructions_come_first(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    remember(server, agent, oai, "I am allergic to peanuts.")

    with learning(agent, server_url=server.url):
        oai.responses.create(model="m", instructions="Answer in French.", input="Am I allergic?")

    instructions = fake_openai.requests[-1]["instructions"]
    assert instructions.startswith("Answer in French.\n\n" + HEADER)
    assert "peanuts" in instructions


def test_a_list_input_and_a_function_call_reply(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    call = ToolCallScript("book_table", '{"people": 2}', id="call_b")
    fake_openai.replies.append(Reply(text="Booking.", tool_calls=[call]))
    given: ResponseInputParam = [
        {"role": "system", "content": "You book restaurants."},
        {"role": "user", "content": [{"type": "input_text", "text": "A table for two, please."}]},
    ]

    with learning(agent, server_url=server.url, capture_only=True):
        answer = oai.responses.create(model="m", input=given)

    assert answer.output_text == "Booking."
    assert "instructions" not in fake_openai.requests[-1]
    assert fake_openai.requests[-1]["input"] == given
    stored = server.messages(agent)
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "A table for two, please."),
        ("assistant", 'Booking.\n[tool call] book_table({"people": 2})'),
    ]
    assert stored[1]["metadata"]["api"] == "openai.responses"
    assert stored[1]["metadata"]["tool_calls"][0]["id"] == "call_b"


def test_a_streamed_response_and_the_stream_helper_are_captured(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    fake_openai.replies += [Reply(text="Streamed reply."), Reply(text="Helper reply.")]

    with learning(agent, server_url=server.url, capture_only=True):
        events = oai.responses.create(model="m", input="Stream it.", stream=True)
        deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
        with oai.responses.stream(model="m", input="Use the helper.") as helper:
            final = helper.get_final_response()

    assert "".join(deltas) == "Streamed reply."
    assert final.output_text == "Helper reply."
    assert server.said(agent) == [
        ("user", "Stream it."),
        ("assistant", "Streamed reply."),
        ("user", "Use the helper."),
        ("assistant", "Helper reply."),
    ]


def test_a_streamed_response_closed_early_is_interrupted(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    # created, item added, part added, then "One" and " two"; then the model hangs.
    fake_openai.replies.append(Reply(text="One two three four five", stall_after_chunks=5))

    with (
        learning(agent, server_url=server.url, capture_only=True),
        oai.responses.create(model="m", input="Count.", stream=True) as events,
    ):
        for _ in range(5):
            next(events)

    (reply,) = [m for m in server.messages(agent) if m["role"] == "assistant"]
    assert (reply["content"], reply["metadata"]["interrupted"]) == ("One two", True)


async def test_async_responses(
    server: MemoryServer, agent: str, aoai: AsyncOpenAI, fake_openai: FakeLLM
) -> None:
    async with learning(agent, server_url=server.url):
        await aoai.responses.create(model="m", input="My boat is named Petrel.")
    fake_openai.replies.append(Reply(text="Petrel."))

    async with learning(agent, server_url=server.url):
        answer = await aoai.responses.create(model="m", input="What is my boat named?")

    assert answer.output_text == "Petrel."
    assert "Petrel" in fake_openai.requests[-1]["instructions"]
    assert server.said(agent)[-1] == ("assistant", "Petrel.")


def test_the_stream_helper_gets_the_memory_though_it_passes_instructions_as_omitted(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    remember(server, agent, oai, "My sister is called Ines.")
    fake_openai.replies.append(Reply(text="Ines."))

    # responses.stream() calls create with instructions=omit: no instructions, not a value.
    with (
        learning(agent, server_url=server.url) as memory,
        oai.responses.stream(model="m", input="What is my sister called?") as stream,
    ):
        final = stream.get_final_response()

    assert final.output_text == "Ines."
    assert "My sister is called Ines." in fake_openai.requests[-1]["instructions"]
    assert memory.context_failures == 0
