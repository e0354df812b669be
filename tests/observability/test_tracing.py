"""OpenTelemetry, when configured: a span per request (continuing the caller's trace), per
table call and per LLM call, the latter two under the request's. Without the extra `otel`,
asking for traces stops the server at start-up with a message naming the extra."""

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from api.config import ConfigError, Settings
from api.main import create_app
from api.observability import tracing
from tests.observability.conftest import loopback_client

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    yield exporter
    tracing.use(None)
    provider.shutdown()


def named(found: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [span for span in found if span.name.startswith(prefix)]


def test_a_turn_is_traced_request_store_and_llm(
    settings: Settings, spans: InMemorySpanExporter
) -> None:
    with loopback_client(create_app(settings)) as client:
        agent = client.post("/agents", json={"name": "Kit"}).json()["id"]
        spans.clear()
        turn = client.post(
            "/chat",
            json={"agent_id": agent, "prompt": "My name is Alice.", "stream": False},
            headers={
                "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01",
                "X-Request-ID": "traced-turn",
            },
        )
        assert turn.status_code == 200, turn.text
    found = spans.get_finished_spans()
    [request] = named(found, "POST /chat")
    assert request.kind == SpanKind.SERVER
    assert request.context is not None
    assert request.parent is not None
    assert format(request.context.trace_id, "032x") == TRACE_ID  # the caller's trace
    assert format(request.parent.span_id, "016x") == PARENT_ID
    attributes = dict(request.attributes or {})
    assert attributes["http.route"] == "/chat"
    assert attributes["http.response.status_code"] == 200
    assert attributes["request.id"] == "traced-turn"

    children = [s for s in found if s.parent and s.parent.span_id == request.context.span_id]
    store = named(tuple(children), "store.")
    assert {"store.get", "store.query", "store.transact_write"} <= {s.name for s in store}
    assert all(dict(s.attributes or {})["db.system.name"] == "sqlite" for s in store)
    llm = named(tuple(children), "chat ")
    assert llm, [s.name for s in found]
    first = dict(llm[0].attributes or {})
    assert first["gen_ai.system"] == "offline"
    assert int(str(first["gen_ai.usage.input_tokens"])) > 0


def test_a_failing_request_is_an_error_span(
    settings: Settings, spans: InMemorySpanExporter
) -> None:
    app = create_app(settings)

    @app.get("/_test/crash")
    async def crash() -> None:
        raise RuntimeError("boom")

    with loopback_client(app) as client:
        assert client.get("/_test/crash").status_code == 500
        assert client.get("/agents/missing").status_code == 404
    [crashed] = named(spans.get_finished_spans(), "GET /_test/crash")
    assert crashed.status.status_code == StatusCode.ERROR
    assert any(event.name == "exception" for event in crashed.events)
    [missing] = named(spans.get_finished_spans(), "GET /agents/{agent_id}")
    assert missing.status.status_code != StatusCode.ERROR  # a 404 is the client's


def test_off_by_default_no_spans(settings: Settings) -> None:
    assert settings.tracing == "off"
    assert not tracing.enabled()
    with loopback_client(create_app(settings)) as client:
        assert client.get("/health").status_code == 200
        assert not tracing.enabled()


def test_console_tracing_starts_and_stops_with_the_app(settings: Settings) -> None:
    app = create_app(settings.model_copy(update={"tracing": "console"}))
    with loopback_client(app) as client:
        assert tracing.enabled()
        assert client.get("/health").status_code == 200
    assert not tracing.enabled()


def test_without_the_extra_tracing_stops_start_up_naming_it(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the extra were not installed, whatever this machine has.
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    for mode in ("otlp", "console"):
        with pytest.raises(ConfigError, match=r"extra `otel`.*uv sync --extra otel"):
            create_app(settings.model_copy(update={"tracing": mode}))


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(
    _installed("opentelemetry.exporter.otlp.proto.http"), reason="the extra is installed here"
)
def test_serve_exits_naming_the_extra(tmp_path: object) -> None:
    env = {**os.environ, "TRACING": "otlp", "SQLITE_PATH": f"{tmp_path}/x.db"}
    done = subprocess.run(
        [sys.executable, "-m", "api.cli", "serve", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "TRACING=otlp" in done.stderr
    assert "uv sync --extra otel" in done.stderr
