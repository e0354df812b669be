"""A synchronous call's memory is fetched while the SDK builds the request: POST /context is
sent first, and its answer is read in the client's options hook (`_prepare_options`),
which puts the memory in the body of each attempt. These tests hold the fetch at a proxy
to see the order, and check what the hook must not change: the client after the context,
a client class with its own hook, retries, and a call the SDK refuses before sending."""

import gc
import json
import threading
import weakref
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI

from client import learning, patching
from tests.client.conftest import ask, memory_in
from tests.client.proxy import Proxy, recording_proxy
from tests.client.server_process import MemoryServer
from tests.fakes.llm_servers import FakeLLM, Reply

HOOK = "_prepare_options"


def remembered(server: MemoryServer, agent: str, fact: str) -> None:
    server.http.post("/agents", json={"name": agent})
    block = {"agent_name": agent, "label": "human", "value": fact}
    assert server.http.post("/memory-blocks", json=block).status_code == 201


class Watched(OpenAI):
    """A client whose class has a hook of its own, as AzureOpenAI's: it runs before the
    memory goes in. It notes whether the proxy still holds POST /context, then lets it go."""

    def __init__(self, *args: Any, proxy: Proxy, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.proxy = proxy
        self.held: list[bool] = []

    def _prepare_options(self, options: Any) -> Any:
        # No super(): the memory must go in after whatever a subclass's hook does.
        self.held.append(self.proxy.hold_context.is_set())
        self.proxy.release()
        return options


def test_the_fetch_is_under_way_while_the_sdk_builds_the_request(
    server: MemoryServer, agent: str, fake_openai: FakeLLM
) -> None:
    remembered(server, agent, "Name: Alice")
    with recording_proxy(server.url) as proxy:
        proxy.hold_context.set()
        # A fetch made before the SDK's hook runs would wait for this timer.
        timer = threading.Timer(3, proxy.release)
        timer.start()
        try:
            with (
                Watched(base_url=fake_openai.base_url, api_key="sk", proxy=proxy) as sdk,
                learning(agent, server_url=proxy.url),
            ):
                sdk.chat.completions.create(model="m", messages=ask("What is my name?"))
        finally:
            timer.cancel()
    # The SDK's hook ran while POST /context was held at the proxy, sent and unanswered.
    assert sdk.held == [True]
    assert f"POST /context/{agent}" in proxy.seen
    assert "Name: Alice" in memory_in(fake_openai.requests[-1])


def test_the_client_is_left_as_it_was(server: MemoryServer, agent: str, oai: OpenAI) -> None:
    def own_hook(options: Any) -> Any:
        return options

    class_hook = type(oai).__dict__.get(HOOK) or OpenAI._prepare_options
    with learning(agent, server_url=server.url):
        assert HOOK not in vars(oai)  # wrapped at its first call, not before
        oai.chat.completions.create(model="m", messages=ask("Hello."))
        assert HOOK in vars(oai)
    assert HOOK not in vars(oai)
    assert getattr(type(oai), HOOK) is class_hook

    oai._prepare_options = own_hook  # type: ignore[method-assign]
    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("Hello again."))
        assert vars(oai)[HOOK] is not own_hook
    assert vars(oai)[HOOK] is own_hook


def test_a_hook_the_user_sets_inside_the_context_stays(
    server: MemoryServer, agent: str, oai: OpenAI
) -> None:
    def theirs(options: Any) -> Any:
        return options

    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("Hello."))
        oai._prepare_options = theirs  # type: ignore[method-assign]
    assert vars(oai)[HOOK] is theirs


def test_every_attempt_carries_the_memory_fetched_once(
    server: MemoryServer, agent: str, fake_openai: FakeLLM
) -> None:
    remembered(server, agent, "Name: Alice")
    fake_openai.replies += [Reply(status=500, retry_after=0.01), Reply(text="second try")]
    with (
        recording_proxy(server.url) as proxy,
        OpenAI(base_url=fake_openai.base_url, api_key="sk", max_retries=1) as sdk,
        learning(agent, server_url=proxy.url) as memory,
    ):
        answer = sdk.chat.completions.create(model="m", messages=ask("What is my name?"))
        assert answer.choices[0].message.content == "second try"
    assert len(fake_openai.requests) == 2
    assert all("Name: Alice" in memory_in(request) for request in fake_openai.requests)
    assert proxy.seen.count(f"POST /context/{agent}") == 1
    assert memory.context_failures == 0


def test_a_call_the_sdk_refuses_before_sending_gives_its_fetch_up(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    remembered(server, agent, "Name: Alice")
    with learning(agent, server_url=server.url) as memory:
        with pytest.raises(TypeError):
            oai.chat.completions.create(messages=ask("No model named."))  # type: ignore[call-overload]
        pool = memory._server.fast if memory._server else None
        assert pool is not None
        opened = pool.opened
        # The given-up fetch's connection was closed, not put back half read: the next
        # call opens a new one and gets its own answer.
        oai.chat.completions.create(model="m", messages=ask("What is my name?"))
        assert pool.opened == opened + 1
    assert memory.context_failures == 0
    assert "Name: Alice" in memory_in(fake_openai.requests[-1])


def test_a_server_failing_after_the_request_was_sent_is_a_counted_failure(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with recording_proxy(server.url) as proxy, learning(agent, server_url=proxy.url) as memory:
        proxy.refuse_context = 503
        answer = oai.chat.completions.create(model="m", messages=ask("Anyone there?"))
    assert answer.choices[0].message.content == "ok"
    assert memory.context_failures == 1
    assert fake_openai.requests[-1]["messages"] == ask("Anyone there?")


class Encoding(OpenAI):
    """A client whose hook encodes the body itself (the SDK sends bytes as they are)."""

    def _prepare_options(self, options: Any) -> Any:
        options = super()._prepare_options(options)
        options.json_data = json.dumps(options.json_data).encode()
        return options


def test_a_body_the_hook_cannot_read_goes_without_memory_counted(
    server: MemoryServer, agent: str, fake_openai: FakeLLM
) -> None:
    remembered(server, agent, "Name: Alice")
    with (
        Encoding(base_url=fake_openai.base_url, api_key="sk", max_retries=0) as sdk,
        learning(agent, server_url=server.url) as memory,
    ):
        answer = sdk.chat.completions.create(model="m", messages=ask("What is my name?"))
    assert answer.choices[0].message.content == "ok"
    assert fake_openai.requests[-1]["messages"] == ask("What is my name?")
    assert memory.context_failures == 1
    assert any("body was not an object" in e for e in memory.errors)


def test_only_a_client_with_a_synchronous_hook_is_wrapped(
    server: MemoryServer, agent: str, aoai: AsyncOpenAI
) -> None:
    with learning(agent, server_url=server.url):
        assert not patching.hook(object())  # no hook at all
        assert not patching.hook(aoai)  # an async client's hook is a coroutine function
    assert not patching.hook(OpenAI(api_key="sk"))  # no context is active
    assert HOOK not in vars(aoai)


def test_a_client_wrapped_and_then_dropped_is_not_kept_alive(
    server: MemoryServer, agent: str, fake_openai: FakeLLM
) -> None:
    """A program that makes a client per request inside one long learning() must not keep
    every client (and its connections) until the context ends."""
    with learning(agent, server_url=server.url):
        sdk = OpenAI(base_url=fake_openai.base_url, api_key="sk", max_retries=0)
        sdk.chat.completions.create(model="m", messages=ask("Hello."))
        assert HOOK in vars(sdk)
        gone = weakref.ref(sdk)
        sdk.close()
        del sdk
        gc.collect()
        assert gone() is None
