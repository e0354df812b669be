"""Every way a completion fails, as an OpenAI client sees it: `{"error": {"message",
"type", "param", "code"}}` with the status OpenAI would use, raised by the SDK as its own
exception classes; a failure after the stream began as OpenAI's error chunk."""

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from fastapi.testclient import TestClient
from openai import OpenAI

from api.config import Settings
from api.main import create_app
from api.runtime.hooks import AgentInitialized, HookProvider
from tests.auth.conftest import browser, google
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.fakes.oidc import FakeGoogle
from tests.journal.test_resume import STORY
from tests.memory_server.conftest import google_settings, with_api_key
from tests.openai_compat.conftest import Server, serve, user_says
from tests.runtime.conftest import LOCAL, append, new_agent, use_openai

__all__ = ["google"]

HELLO = user_says("Hello")


def refused(response: httpx2.Response, status: int, code: str, param: str | None = None) -> Any:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code", "request_id"}
    assert (error["code"], error["param"]) == (code, param), error
    assert error["request_id"] == response.headers["X-Request-ID"]
    assert error["message"]
    return error


def post(server: Server, body: Any, **headers: str) -> httpx2.Response:
    return server.http.post("/v1/chat/completions", json=body, headers=headers)


def test_an_unknown_model_is_model_not_found(server: Server, sdk: OpenAI) -> None:
    new_agent(server.http, "Kit")
    for model in ("Nobody", "0" * 32):
        with pytest.raises(openai.NotFoundError) as missing:
            sdk.chat.completions.create(model=model, messages=HELLO)
        assert missing.value.code == "model_not_found"
        assert missing.value.type == "invalid_request_error"
        assert "GET /v1/models" in missing.value.message
    stream = post(server, {"model": "Nobody", "messages": HELLO, "stream": True})
    refused(stream, 404, "model_not_found")  # before any stream begins


@pytest.mark.parametrize(
    ("body", "status", "code", "param"),
    [
        ({"messages": HELLO}, 400, "missing_required_parameter", "model"),
        ({"model": "Kit"}, 400, "missing_required_parameter", "messages"),
        ({"model": "Kit", "messages": []}, 400, "invalid_value", "messages"),
        ({"model": "", "messages": HELLO}, 400, "invalid_value", "model"),
        (
            {"model": "Kit", "messages": [{"role": "robot", "content": "x"}]},
            400,
            "invalid_value",
            "messages[0].role",
        ),
        (
            {"model": "Kit", "messages": HELLO, "temperature": 3},
            400,
            "invalid_value",
            "temperature",
        ),
        ({"model": "Kit", "messages": HELLO, "stream": "often"}, 400, "invalid_value", "stream"),
        ({"model": "Kit", "messages": HELLO, "n": 0}, 400, "invalid_value", "n"),
        ({"model": "Kit", "messages": HELLO, "n": 2}, 400, "unsupported_value", "n"),
        (
            {"model": "Kit", "messages": HELLO, "logprobs": True},
            400,
            "unsupported_value",
            "logprobs",
        ),
        (
            {"model": "Kit", "messages": HELLO, "response_format": {"type": "json_object"}},
            400,
            "unsupported_value",
            "response_format",
        ),
        (
            {"model": "Kit", "messages": HELLO, "tool_choice": "required"},
            400,
            "unsupported_value",
            "tool_choice",
        ),
        (
            {
                "model": "Kit",
                "messages": HELLO,
                "tool_choice": {"type": "function", "function": {"name": "f"}},
            },
            400,
            "unsupported_value",
            "tool_choice",
        ),
        (
            {
                "model": "Kit",
                "messages": HELLO,
                "tool_choice": {
                    "type": "allowed_tools",
                    "allowed_tools": {"mode": "required", "tools": []},
                },
            },
            400,
            "unsupported_value",
            "tool_choice",
        ),
        (
            {"model": "Kit", "messages": [*HELLO, {"role": "assistant", "content": "Hi"}]},
            400,
            "invalid_value",
            "messages[1].role",
        ),
        (
            {"model": "Kit", "messages": [{"role": "user", "content": ""}]},
            400,
            "invalid_value",
            "messages[0].content",
        ),
        (
            {"model": "Kit", "messages": [{"role": "user", "content": "x" * 32_001}]},
            400,
            "invalid_value",
            "messages[0].content",
        ),
        (
            {"model": "Kit", "messages": [{"role": "user", "content": []}]},
            400,
            "invalid_value",
            "messages[0].content",
        ),
        (
            {
                "model": "Kit",
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "What is this?"},
                            {
                                "type": "image_url",
                                "image_url": {"url": "https://example.com/a.png"},
                            },
                        ],
                    }
                ],
            },
            400,
            "unsupported_value",
            "messages[0].content[1]",
        ),
        ({"model": "Kit", "messages": HELLO, "user": "a\x00b"}, 400, "invalid_value", "user"),
        ({"model": "Kit", "messages": HELLO, "user": "s" * 257}, 400, "invalid_value", "user"),
        (["not", "an", "object"], 400, "invalid_value", None),
    ],
)
def test_a_body_openai_would_refuse_is_a_400(
    server: Server, body: Any, status: int, code: str, param: str | None
) -> None:
    new_agent(server.http, "Kit")
    refused(post(server, body), status, code, param)


def test_bad_json_and_bad_headers_are_400s(server: Server, sdk: OpenAI) -> None:
    new_agent(server.http, "Kit")
    broken = server.http.post(
        "/v1/chat/completions", content=b'{"model": ', headers={"content-type": "application/json"}
    )
    refused(broken, 400, "invalid_json")
    body = {"model": "Kit", "messages": HELLO}
    refused(post(server, body, **{"X-Wait": "maybe"}), 400, "invalid_value", "X-Wait")
    with pytest.raises(openai.BadRequestError) as bad:
        sdk.chat.completions.create(model="Kit", messages=HELLO, n=3)
    assert (bad.value.code, bad.value.param) == ("unsupported_value", "n")


def test_a_bad_session_header_is_a_400(server: Server) -> None:
    new_agent(server.http, "Kit")
    body = {"model": "Kit", "messages": HELLO}
    refused(post(server, body, **{"X-Session-Id": "x" * 300}), 400, "invalid_value", "X-Session-Id")


def test_tools_are_ignored_unless_required(server: Server, sdk: OpenAI) -> None:
    """The client's tools are not the agent's: a request offering some is answered in
    text; one that demands a call is refused (above)."""
    new_agent(server.http, "Kit")
    answer = sdk.chat.completions.create(
        model="Kit",
        messages=HELLO,
        tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}],
        tool_choice="auto",
    )
    assert answer.choices[0].message.tool_calls is None
    assert answer.choices[0].message.content
    allowed = {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}
    body = {"model": "Kit", "messages": HELLO, "tool_choice": allowed}
    assert post(server, body).status_code == 200


def test_a_busy_conversation_is_a_409_with_retry_after_when_not_waiting(
    server: Server, sdk: OpenAI, fake_openai: FakeLLM
) -> None:
    use_openai(server.http, fake_openai)
    fake_openai.replies.append(Reply(text=STORY, stall_after_chunks=3))
    body = {"model": "Scripted", "messages": HELLO, "user": "s", "stream": True}
    with server.http.stream("POST", "/v1/chat/completions", json=body) as running:
        assert running.status_code == 200
        lines = running.iter_lines()  # kept: a dropped iterator closes the stream
        next(lines)  # the turn has started: the conversation is busy
        busy = post(server, {**body, "stream": False}, **{"X-Wait": "false"})
        error = refused(busy, 409, "conversation_busy")
        assert error["type"] == "invalid_request_error"
        assert int(busy.headers["Retry-After"]) >= 1
        with pytest.raises(openai.ConflictError) as conflict:
            sdk.chat.completions.create(
                model="Scripted",
                messages=HELLO,
                user="s",
                extra_headers={"X-Wait": "false"},
            )
        assert conflict.value.code == "conversation_busy"
        # Another session of the same agent is not busy.
        fake_openai.replies.append(Reply(text="Elsewhere."))
        other = sdk.chat.completions.create(model="Scripted", messages=HELLO, user="t")
        assert other.choices[0].message.content == "Elsewhere."


def test_a_provider_failing_mid_stream_is_an_openai_error_chunk(
    server: Server, sdk: OpenAI, fake_openai: FakeLLM
) -> None:
    use_openai(server.http, fake_openai)
    fake_openai.replies += [
        Reply(tool_calls=[append("Likes: tea")]),
        Reply(text="You like tea and also", drop_after_chunks=3),
    ]
    stream = sdk.chat.completions.create(
        model="Scripted", messages=user_says("I like tea"), stream=True
    )
    received: list[str] = []
    with pytest.raises(openai.APIError) as failed:
        received.extend(chunk.choices[0].delta.content or "" for chunk in stream)
    assert "".join(received) == "You like"  # what came before the break
    assert failed.value.code == "provider_unavailable"
    assert failed.value.type == "server_error"
    assert failed.value.body == {
        "message": failed.value.message,
        "type": "server_error",
        "param": None,
        "code": "provider_unavailable",
        "request_id": stream.response.headers["X-Request-ID"],
    }


def test_a_turn_failing_without_a_stream_is_not_retried_by_the_sdk(
    server: Server, fake_openai: FakeLLM
) -> None:
    """The turn had begun (the user's message is stored): the SDK's automatic retry would
    be a second turn, so the answer tells it not to."""
    use_openai(server.http, fake_openai)
    fake_openai.replies += [Reply(status=500) for _ in range(3)]  # our adapter's 3 tries
    with server.sdk(max_retries=2) as sdk, pytest.raises(openai.InternalServerError) as failed:
        sdk.chat.completions.create(model="Scripted", messages=HELLO)
    assert failed.value.status_code == 502
    assert failed.value.code == "provider_unavailable"
    assert failed.value.response.headers["x-should-retry"] == "false"
    assert len(fake_openai.requests) == 3  # one turn, not three


def test_a_provider_not_configured_is_refused_before_the_turn(
    server: Server, sdk: OpenAI, fake_openai: FakeLLM
) -> None:
    use_openai(server.http, fake_openai)
    assert server.http.delete("/settings/providers/openai").status_code == 204
    with pytest.raises(openai.NotFoundError) as refused_turn:
        sdk.chat.completions.create(model="Scripted", messages=HELLO)
    assert refused_turn.value.code == "provider_not_configured"
    assert fake_openai.requests == []


class Broken(HookProvider):
    async def on_agent_initialized(self, event: AgentInitialized) -> None:
        raise RuntimeError("/secret/path/to/something broke")


def test_an_unexpected_failure_is_a_500_server_error(tmp_path: Path) -> None:
    settings = Settings(sqlite_path=tmp_path / "b.db", encryption_key="k" * 40)
    app = create_app(settings, hook_providers=[Broken()])
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        new_agent(client, "Kit")
        failed = client.post("/v1/chat/completions", json={"model": "Kit", "messages": HELLO})
    error = refused(failed, 500, "internal_error")
    assert error["type"] == "server_error"
    assert "secret" not in error["message"]


def test_an_idempotency_key_replays_a_completion_but_not_a_stream(server: Server) -> None:
    """A completion sent again with its key is answered again, not run again. Our own
    stream's retry re-attaches to the run's events, which an OpenAI client could not read:
    so a completion's stream names no run, its key is freed when it ends, and a retry runs
    a new turn (in OpenAI's chunks)."""
    new_agent(server.http, "Kit")
    body = {"model": "Kit", "messages": user_says("My name is Alice")}
    first = post(server, body, **{"Idempotency-Key": "once"})
    again = post(server, body, **{"Idempotency-Key": "once"})
    assert again.status_code == first.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()

    streamed = {**body, "stream": True}
    ids = set()
    for _ in range(2):
        deadline = time.monotonic() + 10
        while (sent := post(server, streamed, **{"Idempotency-Key": "twice"})).status_code == 409:
            assert sent.json()["code"] == "idempotency_request_in_progress"  # being freed
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert sent.status_code == 200, sent.text
        assert "idempotent-replayed" not in sent.headers
        data = [line[5:].strip() for line in sent.text.splitlines() if line.startswith("data:")]
        assert data[-1] == "[DONE]"
        ids.add(json.loads(data[0])["id"])
    assert len(ids) == 2  # two turns


@pytest.fixture
def saas(tmp_path: Path, google: FakeGoogle) -> Iterator[tuple[Server, str]]:
    """A server in google mode, and an API key of one of its users (made by signing in
    through another instance of the app on the same store)."""
    settings = google_settings(tmp_path, google)
    with browser(create_app(settings)) as signed_in:
        key = with_api_key(signed_in).headers["Authorization"].removeprefix("Bearer ")
    with serve(settings, "saas") as root, httpx2.Client(base_url=root, timeout=30) as http:
        http.headers["Authorization"] = f"Bearer {key}"
        yield Server(root, http), key


def test_google_mode_takes_an_api_key_as_the_sdks_key(saas: tuple[Server, str]) -> None:
    server, key = saas
    new_agent(server.http, "Kit")
    with OpenAI(base_url=server.v1, api_key=key, max_retries=0) as sdk:
        assert [m.id for m in sdk.models.list().data] == ["Kit"]
        answer = sdk.chat.completions.create(model="Kit", messages=user_says("My name is Ada"))
        assert answer.choices[0].message.content
    for bad in ("anything", "amk_not-a-key"):
        with OpenAI(base_url=server.v1, api_key=bad, max_retries=0) as sdk:
            with pytest.raises(openai.AuthenticationError) as denied:
                sdk.chat.completions.create(model="Kit", messages=HELLO)
            assert denied.value.type == "authentication_error"
            with pytest.raises(openai.AuthenticationError):
                sdk.models.list()
    anonymous = httpx2.post(server.v1 + "/chat/completions", json={"model": "Kit"})
    error = refused(anonymous, 401, "not_authenticated")
    assert error["type"] == "authentication_error"
