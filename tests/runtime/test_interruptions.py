"""A turn cut short: the client leaving mid-stream (the LLM request is closed, the partial
answer kept as interrupted, the next turn fine) and the provider failing mid-turn (an error
event, and every message stored before the failure still listed)."""

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from api.kit.clock import FrozenClock
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.runtime.conftest import (
    append,
    messages,
    names,
    new_conversation,
    parse_sse,
    send,
    use_openai,
)


def eventually(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout}s")
        time.sleep(0.02)


def test_a_client_leaving_cancels_the_llm_and_keeps_the_partial_answer(
    served: str, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    http = httpx2.Client(base_url=served, timeout=30)
    agent_id = use_openai(http, fake_openai)
    conversation_id = new_conversation(http, agent_id)
    # Three chunks (the role, "Once", " upon"), then the fake hangs until we leave.
    fake_openai.replies.append(Reply(text="Once upon a time", stall_after_chunks=3))

    received: list[str] = []
    with http.stream(
        "POST", f"/conversations/{conversation_id}/messages", json={"content": "A story?"}
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:") and '"text"' in line:
                received.append(json.loads(line[5:])["text"])
            if "".join(received) == "Once upon":
                break  # and the response is closed: the client has gone

    eventually(lambda: fake_openai.disconnects == 1, "the LLM request being closed")

    def stored() -> list[dict[str, Any]]:
        return messages(http, conversation_id)

    eventually(lambda: len(stored()) == 2, "the partial answer being stored")
    user, partial = stored()
    assert user["content"] == "A story?"
    assert partial["role"] == "assistant"
    assert partial["content"] == "Once upon"
    assert partial["interrupted"] is True

    clock.advance(1)
    fake_openai.replies.append(Reply(text="Where was I?"))
    # The cut turn lets go of the conversation just after storing its part, so a client
    # quick enough could still meet it busy: it waits its turn, as the 409 tells it to.
    found = send(http, conversation_id, "Go on", wait=True)
    assert names(found)[-1] == "run.completed"
    assert found[-2].data["content"] == "Where was I?"
    system = fake_openai.requests[-1]["messages"][0]["content"]
    assert "user: A story?\nassistant: Once upon (interrupted)" in system
    http.close()


def test_a_provider_breaking_off_mid_stream(
    client: TestClient, fake_openai: FakeLLM, clock: FrozenClock
) -> None:
    agent_id = use_openai(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)
    fake_openai.replies += [
        Reply(tool_calls=[append("Likes: tea")]),
        Reply(text="You like tea and also", drop_after_chunks=3),
    ]

    response = client.post(
        f"/conversations/{conversation_id}/messages", json={"content": "I like tea"}
    )
    found, _ = parse_sse(response.text)

    assert names(found)[-2:] == ["error", "run.failed"]
    error = found[-2].data
    assert error["code"] == "provider_unavailable"
    assert error["message"]
    assert "".join(e.data["text"] for e in found if e.name == "text.delta") == "You like"
    stored = messages(client, conversation_id)
    assert [(m["role"], m["interrupted"]) for m in stored] == [
        ("user", False),
        ("assistant", False),  # the tool call
        ("tool", False),
        ("assistant", True),  # what came before the break
    ]
    assert stored[3]["content"] == "You like"
    assert stored[2]["content"].startswith('Appended to [human] at line 1: "Likes: tea"')

    # The conversation goes on.
    clock.advance(1)
    fake_openai.replies.append(Reply(text="Sorry, where were we?"))
    again = client.post(f"/conversations/{conversation_id}/messages", json={"content": "Hello?"})
    assert names(parse_sse(again.text)[0])[-1] == "run.completed"


def test_a_provider_failing_at_a_later_step(client: TestClient, fake_openai: FakeLLM) -> None:
    agent_id = use_openai(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)
    fake_openai.replies += [
        Reply(tool_calls=[ToolCallScript("core_memory_list_blocks", "{}")]),
        # The SDK retries a 500 twice before giving up.
        *[Reply(status=500) for _ in range(3)],
    ]

    found = send(client, conversation_id, "What do you remember?")

    assert names(found)[-2:] == ["error", "run.failed"]
    assert found[-2].data["code"] == "provider_unavailable"
    assert found[-1].data["code"] == "provider_unavailable"
    assert [m["role"] for m in messages(client, conversation_id)] == ["user", "assistant", "tool"]


def test_a_failed_turn_in_json_is_the_providers_error(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    agent_id = use_openai(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)
    fake_openai.replies.append(Reply(status=401, error_message="Incorrect API key provided"))

    failed = client.post(
        f"/conversations/{conversation_id}/messages", json={"content": "hi", "stream": False}
    )

    assert failed.status_code == 400
    assert failed.json()["code"] == "provider_auth_failed"
    assert [m["role"] for m in messages(client, conversation_id)] == ["user"]


def test_a_providers_message_quoting_the_key_reaches_no_one(
    client: TestClient, fake_openai: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.runtime.conftest import OPENAI_KEY

    agent_id = use_openai(client, fake_openai)
    conversation_id = new_conversation(client, agent_id)
    quoted = f"Invalid request for key {OPENAI_KEY} (key ends ...{OPENAI_KEY[-12:]})"
    fake_openai.replies += [Reply(status=400, error_message=quoted) for _ in range(2)]

    with caplog.at_level(logging.DEBUG):
        failed = client.post(
            f"/conversations/{conversation_id}/messages", json={"content": "hi", "stream": False}
        )
        streamed = send(client, conversation_id, "again")
    assert failed.json()["code"] == "provider_rejected"
    assert "[redacted]" in failed.json()["message"]
    assert streamed[-2].data["code"] == "provider_rejected"
    for text in (failed.text, caplog.text, *(str(e.data) for e in streamed)):
        assert OPENAI_KEY not in text
        assert OPENAI_KEY[-12:] not in text
