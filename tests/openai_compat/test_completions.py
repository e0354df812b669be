"""Any OpenAI client talks to an agent with memory: the official SDK, sync and async,
streamed and not, against a real server; the agent on the offline model or on the fake
OpenAI. Memory outlives the calls; sessions come from `user` or X-Session-Id."""

import asyncio
import json

from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionToolParam

from api.llm.offline import DISCLAIMER
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.openai_compat.conftest import Server, user_says
from tests.runtime.conftest import append, lines_of, new_agent, use_openai

GREETING = f"Nice to meet you, Alice! I'll remember that. {DISCLAIMER}"
WEATHER_TOOL: ChatCompletionToolParam = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def text_of(chunks: list[ChatCompletionChunk]) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def assert_answered(answer: ChatCompletion, model: str, content: str) -> None:
    assert answer.object == "chat.completion"
    assert answer.id.startswith("chatcmpl-")
    assert answer.model == model
    [choice] = answer.choices
    assert (choice.index, choice.finish_reason) == (0, "stop")
    assert (choice.message.role, choice.message.content) == ("assistant", content)
    assert choice.message.tool_calls is None  # the memory tools stay the agent's own
    assert answer.usage is not None
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens


def test_an_offline_agent_remembers_across_calls(server: Server, sdk: OpenAI) -> None:
    agent_id = new_agent(server.http, "Kit")

    told = sdk.chat.completions.create(model="Kit", messages=user_says("My name is Alice"))
    assert_answered(told, "Kit", GREETING)
    assert told.usage is not None
    assert told.usage.completion_tokens > 0
    assert lines_of(server.http, agent_id) == ["Name: Alice"]  # through its memory tool

    # Core memory is the agent's: another call, by id this time, in another session.
    asked = sdk.chat.completions.create(
        model=agent_id, messages=user_says("What is my name?"), user="elsewhere"
    )
    assert_answered(asked, agent_id, f"Your name is Alice. {DISCLAIMER}")
    # The completion names its run.
    run = server.http.get(f"/runs/{asked.id.removeprefix('chatcmpl-')}").json()
    assert (run["agent_id"], run["state"]) == (agent_id, "completed")


def test_a_streamed_completion_in_openais_chunks(server: Server, sdk: OpenAI) -> None:
    new_agent(server.http, "Kit")
    stream = sdk.chat.completions.create(
        model="kit",  # names compare as agent names do
        messages=user_says("My name is Alice"),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)

    first, *middle, finish, usage = chunks
    assert {c.id for c in chunks} == {first.id}
    assert first.id.startswith("chatcmpl-")
    assert {(c.object, c.model) for c in chunks} == {("chat.completion.chunk", "kit")}
    assert (first.choices[0].delta.role, first.choices[0].delta.content) == ("assistant", "")
    assert text_of(middle) == GREETING
    assert all(c.choices[0].finish_reason is None and c.usage is None for c in middle)
    assert finish.choices[0].finish_reason == "stop"
    assert finish.choices[0].delta.content is None
    assert usage.choices == []
    assert usage.usage is not None
    assert usage.usage.completion_tokens > 0
    assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices)

    # Without include_usage, no usage at all; the stream ends the same way.
    plain = list(
        sdk.chat.completions.create(
            model="Kit", messages=user_says("What is my name?"), stream=True
        )
    )
    assert all(c.usage is None and c.choices for c in plain)
    assert plain[-1].choices[0].finish_reason == "stop"
    assert text_of(plain) == f"Your name is Alice. {DISCLAIMER}"


def test_the_raw_stream_ends_with_done(server: Server) -> None:
    new_agent(server.http, "Kit")
    body = {"model": "Kit", "messages": user_says("Hi"), "stream": True}
    with server.http.stream(
        "POST", "/v1/chat/completions", json=body, headers={"Authorization": "Bearer x"}
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert "run-id" not in response.headers  # see the router: the id names the run
        lines = [line for line in response.iter_lines() if line.startswith("data:")]
    assert lines[-1] == "data: [DONE]"
    assert all(json.loads(line[5:])["object"] == "chat.completion.chunk" for line in lines[:-1])


async def test_the_async_sdk_streamed_and_not(server: Server, async_sdk: AsyncOpenAI) -> None:
    new_agent(server.http, "Kit")
    told = await async_sdk.chat.completions.create(
        model="Kit", messages=user_says("My name is Alice"), user="s"
    )
    assert_answered(told, "Kit", GREETING)

    stream = await async_sdk.chat.completions.create(
        model="Kit",
        messages=user_says("What is my name?"),
        user="s",
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert text_of(chunks) == f"Your name is Alice. {DISCLAIMER}"
    assert chunks[-1].usage is not None

    listed = await async_sdk.models.list()
    assert [m.id for m in listed.data] == ["Kit"]


def test_sessions_come_from_user_or_the_header(server: Server, sdk: OpenAI) -> None:
    """What the offline model only notices (a preference) is known in its session alone,
    through the session's recent turns; the session is `user`, or X-Session-Id over it."""
    agent_id = new_agent(server.http, "Kit")
    sdk.chat.completions.create(model="Kit", messages=user_says("I prefer tea"), user="ada")

    def ask(user: str, headers: dict[str, str] | None = None) -> str | None:
        answer = sdk.chat.completions.create(
            model="Kit", messages=user_says("What do I prefer?"), user=user, extra_headers=headers
        )
        return answer.choices[0].message.content

    assert ask("ada") == f"You prefer tea. {DISCLAIMER}"
    assert ask("bob") == f"I don't know that yet. Tell me and I will remember it. {DISCLAIMER}"
    assert ask("bob", {"X-Session-Id": "ada"}) == f"You prefer tea. {DISCLAIMER}"
    listed = server.http.get("/conversations", params={"agent_id": agent_id}).json()
    assert {c["title"] for c in listed["conversations"]} == {"ada", "bob"}


def test_without_a_session_it_is_the_agents_default_one_as_for_chat(
    server: Server, sdk: OpenAI
) -> None:
    agent_id = new_agent(server.http, "Kit")
    said = server.http.post(
        "/chat", json={"agent_id": agent_id, "prompt": "I prefer coffee", "stream": False}
    )
    assert said.status_code == 200, said.text
    asked = sdk.chat.completions.create(model="Kit", messages=user_says("What do I prefer?"))
    assert asked.choices[0].message.content == f"You prefer coffee. {DISCLAIMER}"


def test_only_the_last_user_message_is_new_input(
    server: Server, sdk: OpenAI, fake_openai: FakeLLM
) -> None:
    """The client's history and system prompt are not the agent's: it has its own memory
    and persona. Its tools are not offered to the model either."""
    use_openai(server.http, fake_openai, "Scripted")
    fake_openai.replies += [
        Reply(tool_calls=[append("Name: Alice")], input_tokens=30, output_tokens=7),
        Reply(text="Nice to meet you, Alice.", input_tokens=40, output_tokens=6),
    ]
    answer = sdk.chat.completions.create(
        model="Scripted",
        messages=[
            {"role": "system", "content": "You are a pirate."},
            {"role": "user", "content": "An old question"},
            {"role": "assistant", "content": "An old answer"},
            {"role": "user", "content": [{"type": "text", "text": "My name is Alice"}]},
        ],
        tools=[WEATHER_TOOL],
        temperature=0.2,
        max_tokens=50,
    )
    assert_answered(answer, "Scripted", "Nice to meet you, Alice.")
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (70, 13)

    first, second = fake_openai.requests
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"] == "My name is Alice"
    sent = json.dumps(first)
    assert "pirate" not in sent
    assert "An old" not in sent
    assert "get_weather" not in sent
    assert "core_memory_append" in {t["function"]["name"] for t in first["tools"]}
    # The tool ran (its result went back to the model) and the memory holds the name.
    assert second["messages"][-1]["role"] == "tool"
    assert "Name: Alice" in second["messages"][-1]["content"]

    fake_openai.replies.append(Reply(text="You are Alice."))
    again = sdk.chat.completions.create(model="Scripted", messages=user_says("Who am I?"))
    assert again.choices[0].message.content == "You are Alice."
    system = fake_openai.requests[-1]["messages"][0]["content"]
    assert "Name: Alice" in system  # core memory, in the agent's own prompt
    assert "user: My name is Alice" in system  # the session's recent conversation


def test_text_of_every_step_streamed_or_not_alike(
    server: Server, sdk: OpenAI, fake_openai: FakeLLM
) -> None:
    """A model may speak before it calls a tool: the client hears every step's text, a
    blank line between steps, whether it streams or not."""
    use_openai(server.http, fake_openai)
    script = [
        Reply(text="Let me note that.", tool_calls=[append("Name: Alice")]),
        Reply(text="Done, Alice."),
    ]
    expected = "Let me note that.\n\nDone, Alice."

    fake_openai.replies += script
    answer = sdk.chat.completions.create(model="Scripted", messages=user_says("I am Alice"))
    assert answer.choices[0].message.content == expected

    fake_openai.replies += script
    chunks = list(
        sdk.chat.completions.create(model="Scripted", messages=user_says("I am Alice"), stream=True)
    )
    assert text_of(chunks) == expected
    assert not any(c.choices[0].delta.tool_calls for c in chunks)


async def test_async_streams_from_the_fake_provider(
    server: Server, async_sdk: AsyncOpenAI, fake_openai: FakeLLM
) -> None:
    use_openai(server.http, fake_openai)
    fake_openai.replies.append(Reply(text="One two three", input_tokens=12, output_tokens=3))
    stream = await async_sdk.chat.completions.create(
        model="Scripted",
        messages=user_says("Count"),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[0].choices[0].delta.role == "assistant"
    assert text_of(chunks) == "One two three"  # deltas close together may come as one
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (12, 3)


def test_models_are_the_callers_agents(server: Server, sdk: OpenAI) -> None:
    assert sdk.models.list().data == []
    kit = new_agent(server.http, "Kit")
    scout = new_agent(server.http, "Scout")
    listed = sdk.models.list().data
    assert [(m.id, m.object, m.owned_by) for m in listed] == [
        ("Kit", "model", "local@localhost"),
        ("Scout", "model", "local@localhost"),
    ]
    extra = [m.model_extra for m in listed]
    assert extra == [
        {"agent_id": kit, "provider": "offline", "provider_model": "offline-demo"},
        {"agent_id": scout, "provider": "offline", "provider_model": "offline-demo"},
    ]


def test_local_mode_takes_any_bearer_or_none(server: Server) -> None:
    new_agent(server.http, "Kit")
    body = {"model": "Kit", "messages": user_says("Hi")}
    for headers in ({}, {"Authorization": "Bearer anything"}, {"Authorization": "Basic x"}):
        answered = server.http.post("/v1/chat/completions", json=body, headers=headers)
        assert answered.status_code == 200, answered.text
        assert server.http.get("/v1/models", headers=headers).status_code == 200


async def test_a_busy_session_is_waited_for_by_default(
    server: Server, async_sdk: AsyncOpenAI, fake_openai: FakeLLM
) -> None:
    """Two calls in one session at once: the second waits for the first, so the
    conversation reads in order."""
    agent_id = use_openai(server.http, fake_openai)
    fake_openai.replies += [
        Reply(text="first answer, slowly", chunk_delay_seconds=0.2),
        Reply(text="second answer"),
    ]
    first = asyncio.ensure_future(
        async_sdk.chat.completions.create(model="Scripted", messages=user_says("one"), user="s")
    )
    while not fake_openai.requests:  # noqa: ASYNC110 (set by the fake's thread)
        await asyncio.sleep(0.02)  # then the first turn holds the conversation
    second = await async_sdk.chat.completions.create(
        model="Scripted", messages=user_says("two"), user="s"
    )
    assert (await first).choices[0].message.content == "first answer, slowly"
    assert second.choices[0].message.content == "second answer"
    listed = server.http.get("/conversations", params={"agent_id": agent_id}).json()
    conversation = listed["conversations"][0]["id"]
    stored = server.http.get(f"/conversations/{conversation}/messages").json()["messages"]
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "one"),
        ("assistant", "first answer, slowly"),
        ("user", "two"),
        ("assistant", "second answer"),
    ]
