"""Specialists over HTTP with the scripted OpenAI: an orchestrator routing to each of two
specialists, their continuity within a session and isolation across sessions, their
failure and timeout as tool results, nested events in the stream (two levels deep), and
the specialists' graph checked when it is saved."""

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from api.runtime.specialists import _outlast
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.runtime.conftest import Event, events_of, messages, names, running, use_openai
from tests.runtime.test_chat import context_of, recent_lines


def ask(tool: str, request: str) -> Reply:
    return Reply(tool_calls=[ToolCallScript(tool, json.dumps({"request": request}))])


def tool_names(fake: FakeLLM, request: int) -> list[str]:
    return [t["function"]["name"] for t in fake.requests[request].get("tools", [])]


def agent(client: httpx2.Client, fake: FakeLLM, name: str, **fields: Any) -> str:
    agent_id = use_openai(client, fake, name)
    if fields:
        changed = client.patch(f"/agents/{agent_id}", json=fields)
        assert changed.status_code == 200, changed.text
    return agent_id


def team(client: httpx2.Client, fake: FakeLLM) -> tuple[str, str, str]:
    """An orchestrator with two specialists: its id, then theirs."""
    billing = agent(client, fake, "Billing", persona="Answers questions about invoices.")
    tech = agent(client, fake, "Tech Support", persona="Fixes problems with the app.")
    desk = agent(client, fake, "Front Desk", specialists=[billing, tech])
    return desk, billing, tech


def turn(client: httpx2.Client, agent_id: str, prompt: str, session: str = "s1") -> list[Event]:
    return events_of(
        client.post("/chat", json={"agent_id": agent_id, "prompt": prompt, "session_id": session})
    )


def top(found: list[Event]) -> list[Event]:
    """The orchestrator's own events, its text aside."""
    return [e for e in found if e.name not in ("nested", "text.delta")]


def nested(found: list[Event], depth: int = 1) -> list[Event]:
    """A specialist's events at `depth`, its text aside."""
    return [
        e
        for e in found
        if e.name == "nested" and e.data["depth"] == depth and e.data["event"] != "text.delta"
    ]


def result_of(found: list[Event]) -> str:
    (result,) = [e for e in found if e.name == "tool.result"]
    content: str = result.data["content"]
    return content


def conversation_of(client: httpx2.Client, agent_id: str, session: str) -> dict[str, Any]:
    listed = client.get("/conversations", params={"agent_id": agent_id}).json()["conversations"]
    (found,) = [c for c in listed if c["session_id"] == session]
    return dict(found)


def test_the_orchestrator_routes_to_each_of_two_specialists(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    desk, billing, tech = team(client, fake_openai)
    assert client.get(f"/agents/{desk}").json()["specialists"] == [billing, tech]
    fake_openai.replies += [
        ask("ask_billing", "Why was I charged twice in May?"),
        Reply(text="A duplicate charge; it is refunded."),
        Reply(text="Billing says it was a duplicate, now refunded."),
    ]
    found = turn(client, desk, "Why was I charged twice?")
    assert names(top(found)) == [
        "run.started",
        "tool.call",
        "tool.result",
        "context.used",
        "message",
        "run.completed",
    ]
    assert result_of(found) == "A duplicate charge; it is refunded."
    assert top(found)[-2].data["content"] == "Billing says it was a duplicate, now refunded."
    # The orchestrator's model was offered both, told whom to ask; the specialist's model
    # saw its own prompt and none of the orchestrator's tools.
    assert tool_names(fake_openai, 0)[-2:] == ["ask_billing", "ask_tech_support"]
    system = context_of(fake_openai, 0)
    assert "You work with specialists" in system
    assert "- ask_billing: Billing\n- ask_tech_support: Tech Support" in system
    specs = {t["function"]["name"]: t["function"] for t in fake_openai.requests[0]["tools"]}
    assert specs["ask_billing"]["description"].endswith("Answers questions about invoices.")
    assert "You are Billing" in context_of(fake_openai, 1)
    assert "Answers questions about invoices." in context_of(fake_openai, 1)
    assert not any(n.startswith("ask_") for n in tool_names(fake_openai, 1))
    assert fake_openai.requests[1]["messages"][-1] == {
        "role": "user",
        "content": "Why was I charged twice in May?",
    }

    # The second specialist, in the next turn.
    fake_openai.replies += [
        ask("ask_tech_support", "The app crashes at login."),
        Reply(text="Update to version 2.1."),
        Reply(text="Tech support says: update to 2.1."),
    ]
    found = turn(client, desk, "The app crashes when I log in.")
    assert result_of(found) == "Update to version 2.1."
    assert {e.data["agent_id"] for e in nested(found)} == {tech}

    # Each specialist's conversation is its own, in the session derived from the
    # orchestrator's, spoken to by the orchestrator (its actor).
    for specialist, asked, answer in (
        (billing, "Why was I charged twice in May?", "A duplicate charge; it is refunded."),
        (tech, "The app crashes at login.", "Update to version 2.1."),
    ):
        conversation = conversation_of(client, specialist, f"s1/via/{desk}")
        stored = messages(client, conversation["id"])
        assert [(m["role"], m["actor_id"], m["content"]) for m in stored] == [
            ("user", desk, asked),
            ("assistant", desk, answer),
        ]


def test_nested_events_are_marked_with_the_specialist_and_their_depth(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    ledger = agent(client, fake_openai, "Ledger")
    billing = agent(client, fake_openai, "Billing", specialists=[ledger])
    desk = agent(client, fake_openai, "Front Desk", specialists=[billing])
    fake_openai.replies += [
        ask("ask_billing", "Balance of account 7?"),
        ask("ask_ledger", "Sum the entries of account 7."),
        Reply(text="12 euros."),
        Reply(text="The balance is 12 euros."),
        Reply(text="You have 12 euros."),
    ]
    found = turn(client, desk, "What is my balance?")
    assert top(found)[-1].name == "run.completed"
    assert top(found)[-2].data["content"] == "You have 12 euros."
    call = next(e for e in found if e.name == "tool.call")
    first = nested(found, 1)
    assert {e.data["agent_id"] for e in first} == {billing}
    assert {e.data["call_id"] for e in first} == {call.data["call_id"]}
    assert {e.data["run_id"] for e in found} == {found[0].data["run_id"]}
    assert [e.data["event"] for e in first] == [
        "run.started",
        "tool.call",
        "tool.result",
        "context.used",
        "message",
        "run.completed",
    ]
    started = first[0].data["payload"]
    assert (started["agent_id"], started["actor_id"]) == (billing, desk)
    assert started["session_id"] == f"s1/via/{desk}"
    assert first[2].data["payload"]["content"] == "12 euros."
    second = nested(found, 2)
    assert {e.data["agent_id"] for e in second} == {ledger}
    assert second[0].data["payload"]["session_id"] == f"s1/via/{desk}/via/{billing}"
    assert second[0].data["payload"]["actor_id"] == billing
    assert [e.data["event"] for e in second][-2:] == ["message", "run.completed"]
    # The events of the specialist's turn come between the call and its result.
    order = [(e.name, e.data.get("depth")) for e in found]
    assert order.index(("tool.call", None)) < order.index(("nested", 2))
    assert order.index(("nested", 2)) < order.index(("tool.result", None))
    # Replayed from the journal as sent.
    replayed = client.get(f"/runs/{found[0].data['run_id']}/events")
    assert [(e.name, e.data) for e in events_of(replayed)] == [(e.name, e.data) for e in found]
    # Each nested turn is a run of its own, completed.
    run = client.get(f"/runs/{started['run_id']}").json()
    assert (run["agent_id"], run["state"]) == (billing, "completed")


def test_a_specialist_remembers_its_session_and_nothing_of_another(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    desk, billing, _ = team(client, fake_openai)
    fake_openai.replies += [
        ask("ask_billing", "The customer's account number is 4411."),
        Reply(text="Noted: account 4411."),
        Reply(text="Billing has it."),
    ]
    turn(client, desk, "My account number is 4411", session="A")
    clock.advance(1)
    fake_openai.replies += [
        ask("ask_billing", "What is the customer's account number?"),
        Reply(text="It is 4411."),
        Reply(text="Your account number is 4411."),
    ]
    before = len(fake_openai.requests)
    turn(client, desk, "What is my account number?", session="A")
    asked = context_of(fake_openai, before + 1)
    assert recent_lines(asked) == [
        "user: The customer's account number is 4411.",
        "assistant: Noted: account 4411.",
    ]
    # Another session of the orchestrator: the specialist knows nothing of the first.
    fake_openai.replies += [
        ask("ask_billing", "What is the customer's account number?"),
        Reply(text="I do not know it."),
        Reply(text="Billing does not know."),
    ]
    before = len(fake_openai.requests)
    turn(client, desk, "What is my account number?", session="B")
    assert recent_lines(context_of(fake_openai, before + 1)) == []
    assert "4411" not in context_of(fake_openai, before + 1)
    # Nor does another orchestrator asking in a session of the same name.
    other = agent(client, fake_openai, "Back Office", specialists=[billing])
    fake_openai.replies += [
        ask("ask_billing", "What is the customer's account number?"),
        Reply(text="I do not know it."),
        Reply(text="Unknown."),
    ]
    before = len(fake_openai.requests)
    turn(client, other, "What is my account number?", session="A")
    assert "4411" not in context_of(fake_openai, before + 1)


def test_a_failing_specialist_is_a_tool_result(client: TestClient, fake_openai: FakeLLM) -> None:
    desk, billing, _ = team(client, fake_openai)
    fake_openai.replies += [
        ask("ask_billing", "Refund order 9."),
        Reply(status=400, error_message="the model refused the request"),
        Reply(text="Billing is not answering; try later."),
    ]
    found = turn(client, desk, "Refund order 9")
    assert top(found)[-1].name == "run.completed"
    assert result_of(found).startswith("Billing failed to answer: ")
    assert [e.data["event"] for e in nested(found)][-2:] == ["error", "run.failed"]
    assert top(found)[-2].data["content"] == "Billing is not answering; try later."
    # Its run failed; what it was asked is kept in its conversation.
    conversation = conversation_of(client, billing, f"s1/via/{desk}")
    assert [m["content"] for m in messages(client, conversation["id"])] == ["Refund order 9."]


def test_a_deleted_specialist_leaves_its_orchestrators(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    desk, billing, tech = team(client, fake_openai)
    assert client.delete(f"/agents/{billing}").status_code == 204
    assert client.get(f"/agents/{desk}").json()["specialists"] == [tech]
    fake_openai.replies += [ask("ask_billing", "Anyone there?"), Reply(text="Only tech.")]
    found = turn(client, desk, "Billing?")
    assert tool_names(fake_openai, -2)[-1:] == ["ask_tech_support"]
    assert result_of(found).startswith("There is no tool 'ask_billing'")


def test_a_specialist_deleted_during_the_turn_is_gone(
    client: TestClient, fake_openai: FakeLLM, settings: Settings
) -> None:
    """Deleted after the orchestrator's turn offered it: the call says it is gone, and no
    conversation is opened under it."""
    desk, billing, _ = team(client, fake_openai)
    fake_openai.replies += [
        Reply(
            tool_calls=[ToolCallScript("core_memory_append", '{"block": "human", "content": "x"}')],
            delay_seconds=0.5,
        ),
        ask("ask_billing", "Still there?"),
        Reply(text="Billing is gone."),
    ]
    with client.stream(
        "POST", "/chat", json={"agent_id": desk, "prompt": "Hi", "session_id": "s1"}
    ) as streamed:
        lines = streamed.iter_lines()
        next(line for line in lines if line.startswith("event: run.started"))
        other = httpx2.Client(transport=client._transport, base_url=str(client.base_url))
        assert other.delete(f"/agents/{billing}").status_code == 204
        body = "\n".join([*lines])
    assert "could not be asked: No agent with that id." in body
    assert settings.sqlite_path is not None
    with sqlite3.connect(settings.sqlite_path) as db:
        left = db.execute(
            f'SELECT sk FROM "{settings.dynamodb_table}" WHERE item LIKE ?',  # noqa: S608
            (f"%{billing}%",),
        ).fetchall()
    assert left == []


@pytest.fixture
def hurried(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    settings = Settings(
        sqlite_path=tmp_path / "hurried.db", encryption_key="k" * 40, specialist_seconds=1
    )
    with running(settings, clock) as client:
        yield client


def test_a_specialist_out_of_time_is_stopped_and_a_tool_result(
    hurried: TestClient, fake_openai: FakeLLM
) -> None:
    desk, billing, _ = team(hurried, fake_openai)
    fake_openai.replies += [
        ask("ask_billing", "Audit every invoice since 1990."),
        Reply(text="Auditing " + "slowly " * 50, stall_after_chunks=4),
        Reply(text="Billing took too long."),
    ]
    found = turn(hurried, desk, "Audit everything")
    assert top(found)[-1].name == "run.completed"
    assert result_of(found).startswith("Billing did not answer in time (1 s)")
    assert [e.data["event"] for e in nested(found)][-2:] == ["error", "run.failed"]
    started = nested(found)[0].data["payload"]
    assert hurried.get(f"/runs/{started['run_id']}").json()["state"] == "interrupted"
    stored = messages(hurried, conversation_of(hurried, billing, f"s1/via/{desk}")["id"])
    assert [(m["role"], m["interrupted"]) for m in stored] == [
        ("user", False),
        ("assistant", True),
    ]
    assert stored[1]["content"].startswith("Auditing")
    # The conversation of the specialist is free for the next question.
    fake_openai.replies += [
        ask("ask_billing", "Just May, then."),
        Reply(text="May is fine."),
        Reply(text="May is fine."),
    ]
    assert result_of(turn(hurried, desk, "Just May")) == "May is fine."


def refused(response: httpx2.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    assert response.json()["code"] == code
    message: str = response.json()["message"]
    return message


def test_the_specialists_graph_is_checked_when_saved(client: TestClient) -> None:
    def make(name: str, *specialists: str) -> str:
        made = client.post("/agents", json={"name": name, "specialists": list(specialists)})
        assert made.status_code == 201, made.text
        agent_id: str = made.json()["id"]
        return agent_id

    e = make("E")
    d = make("D")
    c = make("C", d)
    b = make("B", c)
    a = make("A", b)  # A → B → C → D: three deep, the limit
    message = refused(
        client.patch(f"/agents/{d}", json={"specialists": [e]}), 400, "specialists_too_deep"
    )
    assert message == (
        "A chain of specialists may be at most 3 deep; this one would be 4: A → B → C → D → E."
    )
    too_deep = client.post("/agents", json={"name": "Top", "specialists": [a]})
    refused(too_deep, 400, "specialists_too_deep")
    message = refused(
        client.patch(f"/agents/{c}", json={"specialists": [a]}), 400, "specialist_cycle"
    )
    assert message == "Specialists cannot go round in a loop: C → A → B → C."
    refused(client.patch(f"/agents/{b}", json={"specialists": [b]}), 400, "specialist_is_self")
    refused(
        client.patch(f"/agents/{b}", json={"specialists": ["no-such-agent"]}),
        404,
        "specialist_not_found",
    )
    refused(
        client.post("/agents", json={"name": "F", "specialists": ["nope"]}),
        404,
        "specialist_not_found",
    )
    assert client.get("/agents/F").status_code == 404  # nothing was made
    # Nothing refused was saved; a list is saved once per agent, in order.
    assert client.get(f"/agents/{d}").json()["specialists"] == []
    saved = client.patch(f"/agents/{d}", json={"specialists": []})
    assert saved.status_code == 200
    many = client.patch(f"/agents/{e}", json={"specialists": [d, c, d]})
    assert many.json()["specialists"] == [d, c]
    too_many = client.patch(f"/agents/{e}", json={"specialists": [d] * 11})
    assert too_many.status_code == 422


def test_the_agents_form_offers_the_users_agents_as_specialists(client: TestClient) -> None:
    made = client.post("/agents", json={"name": "Billing"}).json()
    form = client.get("/agents/schema").json()
    field = next(f for f in form["fields"] if f["name"] == "specialists")
    assert field["type"] == "multiselect"
    assert field["options"] == [{"value": made["id"], "label": "Billing"}]
    handoff = next(f for f in form["fields"] if f["name"] == "handoff_to_user")
    assert (handoff["type"], handoff["default"]) == ("boolean", False)


async def test_a_cancelled_orchestrator_waits_for_its_specialist_then_stops() -> None:
    """The turn that asked is cancelled while its specialist's turn ends: it waits for that
    end (what the specialist said is stored), then stops, rather than go on to its next step
    with nobody listening."""
    ended = asyncio.Event()

    async def specialist() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0.05)  # storing what it produced
            ended.set()

    running = asyncio.ensure_future(specialist())
    await asyncio.sleep(0)
    running.cancel()
    asking = asyncio.ensure_future(_outlast(running))
    await asyncio.sleep(0.01)
    asking.cancel()  # the person left while the specialist was ending
    with pytest.raises(asyncio.CancelledError):
        await asking
    assert ended.is_set()
