"""learning() with the real OpenAI SDK, a fake model and a real memory server: seed 002's
integration test, capture-only, the originals restored, and the errors of entry."""

import contextvars
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic.resources.messages.messages as anthropic_messages
import openai.resources.chat.completions.completions as chat_completions
import openai.resources.responses.responses as responses
import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionMessageParam

from client import MemoryServerError, MemoryServerUnavailable, learning
from tests.client.conftest import ask, memory_in
from tests.client.proxy import recording_proxy
from tests.client.server_process import MemoryServer, memory_server
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.parallel import free_port

PATCHED = [
    (chat_completions.Completions, "create"),
    (chat_completions.AsyncCompletions, "create"),
    (responses.Responses, "create"),
    (responses.AsyncResponses, "create"),
    (anthropic_messages.Messages, "create"),
    (anthropic_messages.AsyncMessages, "create"),
    (anthropic_messages.Messages, "stream"),
    (anthropic_messages.AsyncMessages, "stream"),
]
ORIGINALS = {(owner, name): vars(owner)[name] for owner, name in PATCHED}


def originals_in_place() -> bool:
    return all(vars(owner)[name] is ORIGINALS[owner, name] for owner, name in PATCHED)


def test_seed_002_a_new_context_remembers_the_name_and_the_language(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    fake_openai.replies.append(Reply(text="Nice to meet you, Alice! Python it is."))
    with learning(agent, server_url=server.url):
        oai.chat.completions.create(
            model="gpt-4", messages=ask("My name is Alice and I prefer Python.")
        )

    fake_openai.replies.append(Reply(text="You are Alice; use Python."))
    with learning(agent, server_url=server.url):
        answer = oai.chat.completions.create(
            model="gpt-4", messages=ask("What is my name, and which language should I use?")
        )

    assert answer.choices[0].message.content == "You are Alice; use Python."
    asked = fake_openai.requests[-1]
    memory = memory_in(asked)
    assert "Alice" in memory
    assert "Python" in memory
    assert "## Relevant Past Conversations" in memory
    # The memory comes first, the user's question stays last and unchanged.
    assert asked["messages"][0]["content"] == memory
    assert asked["messages"][-1] == {
        "role": "user",
        "content": "What is my name, and which language should I use?",
    }
    assert server.said(agent) == [
        ("user", "My name is Alice and I prefer Python."),
        ("assistant", "Nice to meet you, Alice! Python it is."),
        ("user", "What is my name, and which language should I use?"),
        ("assistant", "You are Alice; use Python."),
    ]


def test_the_memory_goes_right_after_a_leading_system_message(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    server.http.post("/agents", json={"name": agent})
    block = {"agent_name": agent, "label": "human", "value": "Name: Alice\nLocation: Boston"}
    assert server.http.post("/memory-blocks", json=block).status_code == 201

    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("Where do I live?", system="Be brief."))

    sent = fake_openai.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "system", "user"]
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert sent[1]["content"] == (
        "The following is context from your memory:\n\n## Memory\n\n### human\n"
        "Name: Alice\nLocation: Boston"
    )


def test_capture_only_injects_nothing_and_stores_both_messages(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("My favourite colour is teal."))
    fake_openai.replies.append(Reply(text="Noted."))
    messages = ask("Remember that my favourite colour is teal.")

    with learning(agent, server_url=server.url, capture_only=True) as memory:
        oai.chat.completions.create(model="m", messages=messages)

    assert fake_openai.requests[-1]["messages"] == messages  # nothing injected
    assert memory.stored == 2
    assert server.said(agent)[-2:] == [
        ("user", "Remember that my favourite colour is teal."),
        ("assistant", "Noted."),
    ]


def test_the_response_comes_back_unchanged_and_the_request_list_untouched(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("I live in Lisbon."))
    messages = ask("Where do I live?")
    before = [dict(m) for m in messages]

    with learning(agent, server_url=server.url):
        plain = oai.chat.completions.with_raw_response.create(model="m", messages=messages)
        answer = oai.chat.completions.create(model="m", messages=messages)

    assert fake_openai.requests[-2]["messages"] == before  # with_raw_response: untouched
    assert "Lisbon" in memory_in(fake_openai.requests[-1])
    assert messages == before  # the injection went into a copy
    assert type(answer) is type(plain.parse())
    assert answer.choices[0].message.content == "ok"


def test_a_generator_of_messages_is_read_once_and_sent_whole(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    def messages() -> "list[ChatCompletionMessageParam]":
        return ask("A generator says hello.", system="sys")

    with learning(agent, server_url=server.url, capture_only=True) as memory:
        oai.chat.completions.create(model="m", messages=(m for m in messages()))

    assert fake_openai.requests[-1]["messages"] == messages()
    assert memory.stored == 2


def test_what_a_generator_of_messages_raises_reaches_the_caller(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    def broken() -> "Iterator[ChatCompletionMessageParam]":
        yield {"role": "user", "content": "half a request"}
        raise ValueError("the caller's generator broke")

    with (
        learning(agent, server_url=server.url) as memory,
        pytest.raises(ValueError, match="generator broke"),
    ):
        oai.chat.completions.create(model="m", messages=broken())

    assert fake_openai.requests == []
    assert (memory.stored, memory.capture_failures, memory.context_failures) == (0, 0, 0)


def test_the_originals_are_restored_on_exit_and_after_an_exception(
    server: MemoryServer, agent: str, oai: OpenAI
) -> None:
    assert originals_in_place()
    with learning(agent, server_url=server.url):
        assert not originals_in_place()
    assert originals_in_place()

    def block_that_raises() -> None:
        with learning(agent, server_url=server.url):
            oai.chat.completions.create(model="m", messages=ask("Before the error."))
            raise KeyError("raised in the block")

    with pytest.raises(KeyError, match="raised in the block"):
        block_that_raises()
    assert originals_in_place()
    assert ("user", "Before the error.") in server.said(agent)  # flushed all the same


def test_a_failed_model_call_raises_as_before_and_stores_nothing(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    import openai

    fake_openai.replies.append(Reply(status=429, error_message="slow down"))
    with learning(agent, server_url=server.url) as memory, pytest.raises(openai.RateLimitError):
        oai.chat.completions.create(model="m", messages=ask("This one fails."))
    assert memory.stored == 0
    assert memory.capture_failures == 0
    assert server.said(agent) == []


def test_calls_outside_any_context_pass_through_untouched(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("My dog is called Rex."))

    messages = ask("What is my dog called?")
    oai.chat.completions.create(model="m", messages=messages)

    assert fake_openai.requests[-1]["messages"] == messages
    assert len(server.said(agent)) == 2  # only the call inside the context


def test_tool_calls_are_captured_and_a_tool_loop_stores_the_question_once(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    call = ToolCallScript("get_weather", '{"city": "Paris"}', id="call_w")
    fake_openai.replies += [Reply(tool_calls=[call]), Reply(text="It is sunny in Paris.")]
    # Any: the SDK takes its own response message back in the list, which its types don't say.
    messages: list[Any] = [*ask("What is the weather in Paris?")]

    with learning(agent, server_url=server.url, capture_only=True):
        first = oai.chat.completions.create(model="m", messages=messages)
        assert first.choices[0].message.tool_calls
        messages += [
            first.choices[0].message,  # a pydantic object, as SDK users append it
            {"role": "tool", "tool_call_id": "call_w", "content": "sunny"},
        ]
        oai.chat.completions.create(model="m", messages=messages)

    stored = server.messages(agent)
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "What is the weather in Paris?"),
        ("assistant", '[tool call] get_weather({"city": "Paris"})'),
        ("assistant", "It is sunny in Paris."),
    ]
    assert stored[1]["metadata"]["tool_calls"] == [
        {"id": "call_w", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    ]
    assert stored[1]["metadata"]["api"] == "openai.chat.completions"
    assert stored[1]["metadata"]["model"] == "m"


def test_multimodal_user_content_is_read_from_its_text_parts(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("My cat is named Miso."))
    messages: list[ChatCompletionMessageParam] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Is this my cat"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "text", "text": "named Miso?"},
            ],
        }
    ]

    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=messages)

    sent = fake_openai.requests[-1]["messages"]
    assert sent[1] == messages[0]  # the image part travels as it was
    assert "My cat is named Miso." in memory_in(fake_openai.requests[-1])
    assert server.said(agent)[-2] == ("user", "Is this my cat\nnamed Miso?")


def test_an_unreachable_server_on_entry_is_a_clear_error(agent: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(MemoryServerUnavailable) as refused, learning(agent, server_url=url):
        pytest.fail("the block must not run")
    message = str(refused.value)
    assert f"Cannot reach the memory server at {url}" in message
    assert "Start the memory server" in message
    assert "agent-memory serve" in message
    assert "MEMORY_SERVER_URL" in message
    assert originals_in_place()


def test_something_that_is_not_a_memory_server_is_refused_on_entry(
    agent: str, fake_openai: FakeLLM
) -> None:
    with pytest.raises(MemoryServerUnavailable) as refused:
        learning(agent, server_url=fake_openai.base_url).__enter__()
    assert refused.value.status == 404
    assert "is not healthy (404" in str(refused.value)
    assert originals_in_place()


def test_an_agent_name_the_server_refuses_fails_on_entry(server: MemoryServer) -> None:
    with pytest.raises(MemoryServerError) as refused:
        learning("x" * 101, server_url=server.url).__enter__()
    assert (refused.value.status, refused.value.code) == (422, "validation_error")
    assert "refused POST /agents: 422 validation_error" in str(refused.value)
    assert originals_in_place()


def test_an_empty_agent_name_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="agent name"):
        learning("  ")


def test_a_context_is_entered_once(server: MemoryServer, agent: str) -> None:
    memory = learning(agent, server_url=server.url)
    with memory:
        pass
    with pytest.raises(RuntimeError, match="entered once"), memory:
        pass
    assert originals_in_place()


def test_the_server_url_comes_from_the_environment(
    server: MemoryServer, agent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_SERVER_URL", server.url + "/")
    with learning(agent) as memory:
        assert memory.server_url == server.url
        assert memory.agent_id == server.http.get(f"/agents/{agent}").json()["id"]

    monkeypatch.delenv("MEMORY_SERVER_URL")
    assert learning(agent).server_url == "http://127.0.0.1:8283"


def test_the_server_killed_mid_context_the_call_goes_on_warned_and_counted(
    tmp_path: Path,
    agent: str,
    oai: OpenAI,
    fake_openai: FakeLLM,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_openai.replies += [Reply(text="first"), Reply(text="still answering")]
    with (
        memory_server(tmp_path / "killed.db", backend="none") as dying,
        learning(agent, server_url=dying.url) as memory,
    ):
        oai.chat.completions.create(model="m", messages=ask("Before the crash."))
        assert memory.flush(10)
        assert memory.stored == 2
        dying.kill()
        with caplog.at_level(logging.WARNING, logger="client"):
            answer = oai.chat.completions.create(model="m", messages=ask("After the crash."))
            assert answer.choices[0].message.content == "still answering"
            assert memory.context_failures == 1
            memory.flush(10)

    assert fake_openai.requests[-1]["messages"] == ask("After the crash.")  # no memory
    assert (memory.stored, memory.capture_failures, memory.pending) == (2, 2, 0)
    assert any("went on without memory" in e for e in memory.errors)
    assert any("the user message was not stored" in e for e in memory.errors)
    assert any("the assistant message was not stored" in e for e in memory.errors)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("went on without memory" in w and agent in w for w in warned)
    assert any("not stored" in w for w in warned)
    assert originals_in_place()


def test_a_tool_loop_step_reuses_the_memory_fetched_for_its_question(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("I am in Paris this week."))
    call = ToolCallScript("get_weather", '{"city": "Paris"}', id="call_w")
    fake_openai.replies += [Reply(tool_calls=[call]), Reply(text="Sunny where you are.")]
    question = "What is the weather where I am?"
    messages: list[Any] = [*ask(question)]

    with learning(agent, server_url=server.url) as memory:
        first = oai.chat.completions.create(model="m", messages=messages)
        assert memory.flush(10)  # the question is stored before the tool loop goes on
        messages += [
            first.choices[0].message,
            {"role": "tool", "tool_call_id": "call_w", "content": "sunny"},
        ]
        oai.chat.completions.create(model="m", messages=messages)

    asked_first = memory_in(fake_openai.requests[-2])
    assert "I am in Paris this week." in asked_first
    # Fetched again, the memory would quote the question the loop is answering.
    assert memory_in(fake_openai.requests[-1]) == asked_first
    assert question not in asked_first
    assert [m for m in server.said(agent) if m == ("user", question)] == [("user", question)]


def test_a_call_is_intercepted_once_under_another_librarys_patch(
    server: MemoryServer,
    agent: str,
    oai: OpenAI,
    fake_openai: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("My bike is red."))
    owner = chat_completions.Completions
    monkeypatch.setattr(owner, "create", vars(owner)["create"])  # put back at the end

    with learning(agent, server_url=server.url):
        ours = vars(owner)["create"]

        def traced(self: object, *args: Any, **kwargs: Any) -> Any:
            """Another library's wrapper (a tracer), patched over ours while it is active."""
            return ours(self, *args, **kwargs)

        monkeypatch.setattr(owner, "create", traced)
    assert vars(owner)["create"] is traced  # left in place, still wrapping ours

    with learning(agent, server_url=server.url) as memory:  # patches over the tracer again
        oai.chat.completions.create(model="m", messages=ask("What colour is my bike?"))

    assert "My bike is red." in memory_in(fake_openai.requests[-1])  # injected once
    assert memory.stored == 2
    assert server.said(agent)[2:] == [
        ("user", "What colour is my bike?"),
        ("assistant", "ok"),
    ]


async def test_an_async_call_is_intercepted_once_under_another_librarys_patch(
    server: MemoryServer,
    agent: str,
    aoai: AsyncOpenAI,
    fake_openai: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner = chat_completions.AsyncCompletions
    monkeypatch.setattr(owner, "create", vars(owner)["create"])
    async with learning(agent, server_url=server.url):
        ours = vars(owner)["create"]

        async def traced(self: object, *args: Any, **kwargs: Any) -> Any:
            return await ours(self, *args, **kwargs)

        monkeypatch.setattr(owner, "create", traced)

    async with learning(agent, server_url=server.url, capture_only=True) as memory:
        await aoai.chat.completions.create(model="m", messages=ask("Once only."))

    assert memory.stored == 2
    assert server.said(agent) == [("user", "Once only."), ("assistant", "ok")]


def test_an_exchange_is_stored_with_one_request(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with recording_proxy(server.url) as proxy, learning(agent, server_url=proxy.url) as memory:
        oai.chat.completions.create(model="m", messages=ask("One request, please."))
        assert memory.flush(10)
        calls = proxy.seen[proxy.seen.index("POST /agents") + 1 :]

    assert calls == [f"POST /context/{agent}", "POST /messages/batch"]
    assert server.said(agent) == [("user", "One request, please."), ("assistant", "ok")]


def test_a_server_without_batches_gets_the_messages_one_at_a_time(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with (
        recording_proxy(server.url, batches=False) as proxy,
        learning(agent, server_url=proxy.url, capture_only=True) as memory,
    ):
        oai.chat.completions.create(model="m", messages=ask("First."))
        oai.chat.completions.create(model="m", messages=ask("Second."))

    posted = [call for call in proxy.seen if call.startswith("POST /messages")]
    # Refused once, then learnt: seed 002's own server stores them all the same.
    assert posted == ["POST /messages/batch"] + ["POST /messages"] * 4
    assert (memory.stored, memory.capture_failures) == (4, 0)
    assert server.said(agent) == [
        ("user", "First."),
        ("assistant", "ok"),
        ("user", "Second."),
        ("assistant", "ok"),
    ]


def test_a_capture_waits_while_a_memory_fetch_is_under_way(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with recording_proxy(server.url) as proxy, learning(agent, server_url=proxy.url) as memory:
        proxy.hold_context.set()
        fetching = threading.Thread(
            target=contextvars.copy_context().run,
            args=(lambda: oai.chat.completions.create(model="m", messages=ask("Slow fetch.")),),
        )
        fetching.start()
        deadline = time.monotonic() + 10
        while f"POST /context/{agent}" not in proxy.seen:
            assert time.monotonic() < deadline, "the fetch never reached the server"
            time.sleep(0.01)
        memory.capture_only = True  # the next call fetches nothing, and is captured
        oai.chat.completions.create(model="m", messages=ask("Captured meanwhile."))
        # Its capture waits for the fetch the other call is waiting on, not the reverse.
        assert not memory.flush(1.0)
        assert "POST /messages/batch" not in proxy.seen
        proxy.release()
        fetching.join(10)
        assert memory.flush(10)

    assert memory.stored == 4
    assert proxy.seen.count("POST /messages/batch") == 2
