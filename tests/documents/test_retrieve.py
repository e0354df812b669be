"""`retrieve` over HTTP: the scripted fake OpenAI (driven through the official SDK, as the
provider drives the real one) calls it, and what comes back to the model cites a PDF's page
and a Markdown heading; it is offered only to an agent holding documents; and seed 001's
single-agent example (`tools=[retrieve, handoff_to_user]`) built through the API, with its
continuity scenario: the same session remembers, another session does not."""

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.documents.conftest import ready
from tests.documents.test_documents import GUIDE, HANDBOOK
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript, start_fake_openai
from tests.runtime.conftest import OPENAI_KEY, running

PERSONA = "You help customers of Acme with their orders, from Acme's documents."


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLM]:
    with start_fake_openai() as fake:
        yield fake


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, fake: FakeLLM) -> Iterator[TestClient]:
    """One app for the module, its user's OpenAI settings pointing at the fake."""
    settings = Settings(
        sqlite_path=tmp_path_factory.mktemp("retrieve") / "app.db", encryption_key="k" * 40
    )
    with running(settings, FrozenClock(float(int(time.time())))) as client:
        saved = client.put(
            "/settings/providers/openai", json={"api_key": OPENAI_KEY, "base_url": fake.base_url}
        )
        assert saved.status_code == 200, saved.text
        yield client


@pytest.fixture(autouse=True)
def fresh(fake: FakeLLM) -> None:
    fake.replies.clear()
    fake.requests.clear()


def support_agent(client: httpx2.Client, name: str, **fields: Any) -> str:
    """Seed 001's single agent: "You help customers...", on the (fake) OpenAI model."""
    created = client.post(
        "/agents",
        json={
            "name": name,
            "provider": "openai",
            "model": "gpt-4o-mini",
            "persona": PERSONA,
            **fields,
        },
    )
    assert created.status_code == 201, created.text
    agent_id: str = created.json()["id"]
    return agent_id


def chat(client: httpx2.Client, agent_id: str, prompt: str, **body: Any) -> httpx2.Response:
    answered = client.post(
        "/chat", json={"agent_id": agent_id, "prompt": prompt, "stream": False, **body}
    )
    assert answered.status_code == 200, answered.text
    return answered


def retrieve(query: str) -> ToolCallScript:
    return ToolCallScript("retrieve", json.dumps({"query": query}))


def handoff(question: str) -> ToolCallScript:
    return ToolCallScript("handoff_to_user", json.dumps({"question": question}))


def tool_names(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def tool_reply(request: dict[str, Any]) -> str:
    """What the last tool call of the conversation so far answered."""
    replies = [m for m in request["messages"] if m["role"] == "tool"]
    content: str = replies[-1]["content"]
    return content


def system_prompt(request: dict[str, Any]) -> str:
    content: str = request["messages"][0]["content"]
    return content


def test_retrieve_cites_a_pdf_page_and_a_markdown_heading(
    client: TestClient, fake: FakeLLM
) -> None:
    agent = support_agent(client, "Citer")
    ready(client, agent, "handbook.pdf", HANDBOOK, "application/pdf")
    ready(client, agent, "guide.md", GUIDE, "text/markdown")
    fake.replies += [
        Reply(tool_calls=[retrieve("refund window days")]),
        Reply(tool_calls=[retrieve("when are invoices sent")]),
        Reply(text="Refunds: 30 days (handbook.pdf, page 2); invoices: the 1st (guide.md)."),
    ]
    answered = chat(client, agent, "How long do I have for a refund, and when do invoices come?")
    assert answered.json()["output"].startswith("Refunds: 30 days")
    assert "retrieve" in tool_names(fake.requests[0])

    refund = tool_reply(fake.requests[1])
    assert refund.startswith('Retrieved for "refund window days"')
    first = refund.split("\n\n")[1]  # the best passage: its source, then its text
    assert first.startswith("[1] handbook.pdf, page 2\n")
    assert "Refunds are accepted within 30 days of purchase." in first

    invoices = tool_reply(fake.requests[2]).split("\n\n")[1]
    assert invoices.startswith('[1] guide.md, "Guide > Billing > Invoices"\n')
    assert "Invoices are sent on the first day of each month." in invoices

    # The turn's record of what it used names the passages it gave the model.
    run = client.get(f"/runs/{answered.headers['Run-Id']}").json()
    used = [s for s in run["sources"]["items"] if s["kind"] == "passage"]
    assert {s["via"] for s in used} == {"retrieve"}
    assert any(s["preview"].startswith("handbook.pdf, page 2: ") for s in used)
    assert any(s["preview"].startswith('guide.md, "Guide > Billing > Invoices": ') for s in used)


def test_nothing_matching_and_a_bad_call_are_said_so(client: TestClient, fake: FakeLLM) -> None:
    agent = support_agent(client, "Honest")
    ready(client, agent, "guide.md", GUIDE, "text/markdown")
    fake.replies += [
        Reply(tool_calls=[retrieve("zeppelin mooring")]),
        Reply(tool_calls=[ToolCallScript("retrieve", json.dumps({"query": "x", "count": 50}))]),
        Reply(text="Unknown."),
    ]
    chat(client, agent, "Where do I moor my zeppelin?")
    assert tool_reply(fake.requests[1]) == (
        'Retrieved for "zeppelin mooring": no passage of your documents matches.'
    )
    # A call the tool cannot serve is told why, and the turn goes on.
    assert tool_reply(fake.requests[2]) == (
        "Invalid arguments for retrieve: 'count' must be from 1 to 10."
    )


def test_retrieve_is_offered_only_while_the_agent_holds_a_document(
    client: TestClient, fake: FakeLLM
) -> None:
    agent = support_agent(client, "Offered")
    chat(client, agent, "hello")
    assert "retrieve" not in tool_names(fake.requests[-1])
    doc = ready(client, agent, "guide.md", GUIDE, "text/markdown")
    # A save of the agent keeps the count its uploads wrote.
    assert (
        client.patch(f"/agents/{agent}", json={"persona": PERSONA + " Be brief."}).status_code
        == 200
    )
    chat(client, agent, "hello again")
    assert "retrieve" in tool_names(fake.requests[-1])
    assert client.delete(f"/agents/{agent}/documents/{doc['id']}").status_code == 204
    chat(client, agent, "and now?")
    assert "retrieve" not in tool_names(fake.requests[-1])


def test_seed_001_single_agent_example(client: TestClient, fake: FakeLLM) -> None:
    """Seed 001's single agent built through the API: a persona ("You help customers..."),
    `tools=[retrieve, handoff_to_user]` (`retrieve` from its first document on,
    `handoff_to_user` its opt-in), the memory hooks injected by the runtime. Continuity:
    the same session remembers what was said in it, another session does not."""
    agent = support_agent(client, "Support", handoff_to_user=True)
    ready(client, agent, "handbook.pdf", HANDBOOK, "application/pdf")
    question = "Was order 4512 delivered more than 30 days ago?"
    fake.replies += [
        Reply(text="Thanks, noted order 4512."),
        Reply(tool_calls=[retrieve("refund days")]),
        Reply(tool_calls=[handoff(question)]),
        Reply(text="Then order 4512 can be refunded: within 30 days (handbook.pdf, page 2)."),
        Reply(text="I have no order number in this conversation."),
    ]
    first = chat(client, agent, "My order number is 4512.", session_id="session-789").json()
    asked = chat(client, agent, "Can I get a refund for my order?", session_id="session-789")
    # Seed 001's two tools, beside the architecture's memory tools.
    assert {"retrieve", "handoff_to_user"} <= set(tool_names(fake.requests[1]))
    assert tool_reply(fake.requests[2]).split("\n\n")[1].startswith("[1] handbook.pdf, page 2\n")
    # The handoff ends the turn with the question for the person.
    assert (asked.json()["reason"], asked.json()["output"]) == ("handoff", question)

    answered = chat(client, agent, "No, it came last week.", session_id="session-789").json()
    assert answered["conversation_id"] == first["conversation_id"]
    assert answered["output"].startswith("Then order 4512 can be refunded")
    # The same session: the hook put the earlier exchanges, the question too, in the context.
    context = system_prompt(fake.requests[3])
    assert PERSONA in context
    assert "user: My order number is 4512." in context
    assert f"assistant: {question}" in context

    # Another session of the same person: none of it.
    other = chat(client, agent, "What is my order number?", session_id="session-other").json()
    assert other["conversation_id"] != first["conversation_id"]
    isolated = system_prompt(fake.requests[4])
    assert "4512" not in isolated
    assert "Recent conversation:" not in isolated
