"""The context preview (`GET /agents/{id}/context`), in both auth modes: what it shows is
what the next turn sends the model (compared with the request the scripted OpenAI fake
receives), its parts add up to its total, an agent's specialists and documents show as
tools, a recall hook's memories show with their ids, and every refusal has its code."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.journal.models import Source
from api.kit.clock import FrozenClock
from api.runtime.architectures.registry import ARCHITECTURES, register
from api.runtime.context import estimate_tokens
from api.runtime.hooks import AgentInitialized, HookProvider
from tests.auth.conftest import google
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.memory_server.conftest import MODES, refused, serve
from tests.runtime.conftest import events_of, names, new_agent, running, use_openai
from tests.runtime.test_hooks import Echo, echo
from tests.runtime.test_sources import Recall

__all__ = ["echo", "google"]

ORDER = ["system", "blocks", "recent_turns", "recalled", "message", "tools"]


@pytest.fixture(params=MODES)
def api(request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    yield from serve(request.param, request, tmp_path, clock, allow_private_provider_urls=True)


def chat(client: TestClient, agent_id: str, session: str, prompt: str) -> None:
    found = events_of(
        client.post("/chat", json={"agent_id": agent_id, "session_id": session, "prompt": prompt})
    )
    assert names(found)[-1] == "run.completed", found


def context(client: TestClient, agent_id: str, **params: str) -> dict[str, Any]:
    got = client.get(f"/agents/{agent_id}/context", params=params)
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    assert [p["name"] for p in body["parts"]] == ORDER
    assert body["total_tokens"] == sum(p["tokens"] for p in body["parts"])
    return body


def part(body: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in body["parts"] if p["name"] == name)
    return found


def test_the_preview_is_what_the_next_turn_sends(api: TestClient, fake_openai: FakeLLM) -> None:
    agent_id = use_openai(api, fake_openai)
    assert api.post(
        f"/agents/{agent_id}/memory/blocks/human/lines", json={"content": "Name: Ada"}
    ).is_success
    fake_openai.replies.append(Reply(text="Hello Ada."))
    chat(api, agent_id, "s1", "Hi, I am Ada.")

    shown = context(api, agent_id, session_id="s1", prompt="What is my name?")
    fake_openai.replies.append(Reply(text="Ada."))
    chat(api, agent_id, "s1", "What is my name?")
    sent = fake_openai.requests[-1]

    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    system, user = sent["messages"][0]["content"], sent["messages"][1]["content"]
    assert part(shown, "system")["text"] == system
    assert part(shown, "message")["text"] == user == "What is my name?"
    assert [i["name"] for i in part(shown, "tools")["items"]] == [
        t["function"]["name"] for t in sent["tools"]
    ]
    recent = part(shown, "recent_turns")
    assert recent["count"] == 2
    assert [i["text"] for i in recent["items"]] == ["user: Hi, I am Ada.", "assistant: Hello Ada."]
    assert all(i["id"] for i in recent["items"])
    assert recent["text"] in system
    blocks = part(shown, "blocks")["items"]
    assert [b["name"] for b in blocks] == ["human", "persona"]
    assert all(b["text"] in system for b in blocks)
    assert "1: Name: Ada" in blocks[0]["text"]

    # The system part is the system message less the parts it holds, so nothing counts twice.
    held = sum(len(b["text"]) for b in blocks) + len(recent["text"])
    assert part(shown, "system")["tokens"] == estimate_tokens("x" * (len(system) - held))
    assert shown["estimated"] is True
    assert (shown["provider"], shown["model"]) == ("openai", "gpt-4o-mini")
    assert shown["context_window"] == 128_000
    assert shown["percent_used"] == round(100 * shown["total_tokens"] / 128_000, 2)


def test_without_a_session_there_are_no_recent_turns_and_nothing_is_written(
    api: TestClient,
) -> None:
    agent_id = new_agent(api)
    listed = {"agent_id": agent_id}
    before = api.get("/conversations", params=listed).json()
    assert before["conversations"] == []
    shown = context(api, agent_id)
    assert part(shown, "recent_turns") == {
        "name": "recent_turns",
        "tokens": 0,
        "count": 0,
        "text": "",
        "items": [],
    }
    assert part(shown, "message")["tokens"] == 0
    assert shown["session_id"] is None
    assert (shown["model"], shown["context_window"]) == ("offline-demo", 8_192)
    # A session id a turn would open is only read here: no conversation appears.
    refused(
        api.get(f"/agents/{agent_id}/context", params={"session_id": "new"}),
        404,
        "session_not_found",
    )
    assert api.get("/conversations", params=listed).json() == before


def test_a_conversation_is_named_by_its_id_as_the_list_shows_it(api: TestClient) -> None:
    agent_id = new_agent(api)
    conversation = api.post("/conversations", json={"agent_id": agent_id}).json()["id"]
    sent = api.post(f"/conversations/{conversation}/messages", json={"content": "Hello there"})
    assert sent.status_code == 200
    listed = api.get("/conversations", params={"agent_id": agent_id}).json()
    session = next(c["session_id"] for c in listed["conversations"] if c["id"] == conversation)
    shown = context(api, agent_id, session_id=session)
    assert part(shown, "recent_turns")["items"][0]["text"] == "user: Hello there"
    # Another agent's conversation is not this agent's session.
    other = new_agent(api, "Other")
    refused(
        api.get(f"/agents/{other}/context", params={"session_id": conversation}),
        404,
        "session_not_found",
    )


def test_specialists_and_documents_show_as_tools(api: TestClient) -> None:
    weather = new_agent(api, "Weather")
    agent_id = new_agent(api, "Router", specialists=[weather], handoff_to_user=True)
    uploaded = api.post(
        f"/agents/{agent_id}/documents", files={"file": ("notes.md", b"# Notes\n\nTea at five.")}
    )
    assert uploaded.status_code in (201, 202), uploaded.text
    shown = context(api, agent_id)
    tools = [i["name"] for i in part(shown, "tools")["items"]]
    assert tools[-3:] == ["retrieve", "handoff_to_user", "ask_weather"]
    assert "core_memory_append" in tools
    assert "ask_weather: Weather" in part(shown, "system")["text"]
    assert all(i["tokens"] == estimate_tokens(i["text"]) for i in part(shown, "tools")["items"])


def test_a_recall_hook_shows_what_it_recalled(settings: Settings, clock: FrozenClock) -> None:
    recall = Recall()
    recall.found = [{"id": "mem-1", "score": 0.9, "content": "Drinks dark roast coffee"}]
    with running(settings, clock, hook_providers=[recall]) as client:
        agent_id = new_agent(client)
        shown = context(client, agent_id, prompt="coffee?")
    recalled = part(shown, "recalled")
    assert recalled["items"] == [
        {
            "name": "archival",
            "text": "Drinks dark roast coffee",
            "tokens": estimate_tokens("Drinks dark roast coffee"),
            "id": "mem-1",
            "via": "test_recall",
        }
    ]
    assert recalled["text"] in part(shown, "system")["text"]
    assert recalled["tokens"] == estimate_tokens(recalled["text"])


class ByPrompt(HookProvider):
    """Recalls a memory when the person's message names it, as a recall hook searches."""

    async def on_agent_initialized(self, event: AgentInitialized) -> None:
        if "coffee" in event.prompt:
            event.sections.append("Relevant memories:\nDrinks dark roast coffee")
            event.sources.append(
                Source(kind="archival", id="mem-2", via="by_prompt", preview="Drinks dark roast")
            )


def test_the_message_drives_what_a_hook_recalls_as_in_the_turn(
    settings: Settings, clock: FrozenClock, fake_openai: FakeLLM
) -> None:
    with running(settings, clock, hook_providers=[ByPrompt()]) as client:
        agent_id = use_openai(client, fake_openai)
        assert part(context(client, agent_id, prompt="tea?"), "recalled")["items"] == []
        shown = context(client, agent_id, prompt="coffee?")
        fake_openai.replies.append(Reply(text="Dark roast."))
        chat(client, agent_id, "s2", "coffee?")
    assert [i["id"] for i in part(shown, "recalled")["items"]] == ["mem-2"]
    assert part(shown, "system")["text"] == fake_openai.requests[-1]["messages"][0]["content"]
    assert "Drinks dark roast coffee" in part(shown, "system")["text"]


def test_refusals(api: TestClient) -> None:
    refused(api.get("/agents/nope/context"), 404, "agent_not_found")
    agent_id = new_agent(api)
    refused(
        api.get(f"/agents/{agent_id}/context", params={"prompt": "x" * 32_001}),
        422,
        "validation_error",
    )
    refused(
        api.get(f"/agents/{agent_id}/context", params={"session_id": "a\x01b"}),
        422,
        "validation_error",
    )
    refused(
        api.get(f"/agents/{agent_id}/context", params={"session_id": ""}), 422, "validation_error"
    )


def test_an_architecture_that_keeps_its_prompt_and_one_no_longer_installed(
    client: TestClient, echo: type[Echo]
) -> None:
    agent_id = new_agent(client, "Orphan", architecture=echo.name)
    shown = context(client, agent_id, prompt="hi")
    # Its prompt is known only as its turn runs: the preview says so rather than guess.
    assert shown["prompt_known"] is False
    assert part(shown, "system")["text"] == ""
    assert part(shown, "blocks")["items"] == []
    assert part(shown, "message")["text"] == "hi"
    ARCHITECTURES.pop(echo.name)
    try:
        refused(client.get(f"/agents/{agent_id}/context"), 409, "architecture_unavailable")
    finally:
        register(echo)
