"""Contexts kept apart: two threads with two agents, asyncio tasks, nested contexts, and a
thread that entered no context while another did."""

import asyncio
import threading
from typing import Any

from openai import AsyncOpenAI, OpenAI

from client import learning
from tests.client.conftest import ask, memory_in
from tests.client.server_process import MemoryServer
from tests.fakes.llm_servers import FakeLLM

ROUNDS = 6
PEOPLE = {"alice": "Alice Dupont", "bruno": "Bruno Keller"}


def asked(fake: FakeLLM, text: str) -> dict[str, Any]:
    (request,) = [r for r in fake.requests if r["messages"][-1]["content"] == text]
    return request


def test_two_threads_with_two_agents_never_mix(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    agents = {who: f"{agent}-{who}" for who in PEOPLE}
    start = threading.Barrier(len(PEOPLE))
    failures: list[BaseException] = []

    def converse(who: str) -> None:
        try:
            start.wait(timeout=10)
            with learning(agents[who], server_url=server.url):
                oai.chat.completions.create(
                    model="m", messages=ask(f"My full name is {PEOPLE[who]}.")
                )
            start.wait(timeout=10)  # both have spoken before either asks
            with learning(agents[who], server_url=server.url):
                for n in range(ROUNDS):
                    oai.chat.completions.create(
                        model="m", messages=ask(f"[{who} {n}] What is my full name?")
                    )
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=converse, args=(who,)) for who in PEOPLE]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, failures

    for who, other in (("alice", "bruno"), ("bruno", "alice")):
        for n in range(ROUNDS):
            memory = memory_in(asked(fake_openai, f"[{who} {n}] What is my full name?"))
            assert PEOPLE[who] in memory
            assert PEOPLE[other] not in memory
            assert other not in memory
        said = server.said(agents[who])
        assert len(said) == 2 + 2 * ROUNDS
        assert all(other not in text and PEOPLE[other] not in text for _, text in said)


async def test_asyncio_tasks_with_two_agents_never_mix(
    server: MemoryServer, agent: str, aoai: AsyncOpenAI, fake_openai: FakeLLM
) -> None:
    agents = {who: f"{agent}-{who}" for who in PEOPLE}
    for who in PEOPLE:
        async with learning(agents[who], server_url=server.url):
            await aoai.chat.completions.create(
                model="m", messages=ask(f"My full name is {PEOPLE[who]}.")
            )

    async def converse(who: str) -> None:
        async with learning(agents[who], server_url=server.url):
            for n in range(ROUNDS):
                await aoai.chat.completions.create(
                    model="m", messages=ask(f"[{who} {n}] What is my full name?")
                )
                await asyncio.sleep(0)

    await asyncio.gather(*(converse(who) for who in PEOPLE))

    for who, other in (("alice", "bruno"), ("bruno", "alice")):
        for n in range(ROUNDS):
            memory = memory_in(asked(fake_openai, f"[{who} {n}] What is my full name?"))
            assert PEOPLE[who] in memory
            assert PEOPLE[other] not in memory
        assert len(server.said(agents[who])) == 2 + 2 * ROUNDS


def test_nested_contexts_use_the_innermost_agent_then_the_outer_again(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    outer, inner = f"{agent}-outer", f"{agent}-inner"

    with learning(outer, server_url=server.url, capture_only=True):
        oai.chat.completions.create(model="m", messages=ask("Outer before."))
        with learning(inner, server_url=server.url, capture_only=True):
            oai.chat.completions.create(model="m", messages=ask("Inner."))
        oai.chat.completions.create(model="m", messages=ask("Outer after."))

    assert [t for r, t in server.said(outer) if r == "user"] == ["Outer before.", "Outer after."]
    assert [t for r, t in server.said(inner) if r == "user"] == ["Inner."]

    with learning(outer, server_url=server.url), learning(inner, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("Inner, again?"))
    memory = memory_in(fake_openai.requests[-1])
    assert "Inner." in memory
    assert "Outer" not in memory


def test_a_thread_that_entered_no_context_passes_through(
    server: MemoryServer, agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with learning(agent, server_url=server.url):
        oai.chat.completions.create(model="m", messages=ask("I drink green tea."))
        question = "What do I drink? (from a thread of its own)"
        outside = ask(question)
        thread = threading.Thread(
            target=lambda: oai.chat.completions.create(model="m", messages=outside)
        )
        thread.start()
        thread.join(timeout=30)

    assert asked(fake_openai, question)["messages"] == outside
    assert [t for r, t in server.said(agent) if r == "user"] == ["I drink green tea."]
