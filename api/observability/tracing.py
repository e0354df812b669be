"""OpenTelemetry traces, off unless TRACING is set: a span per request (continuing the
caller's trace from its `traceparent` header), per table call and per LLM call.

The SDK and the OTLP exporter come with the extra `otel` (`uv sync --extra otel`, or
`pip install 'agent-memory[otel]'`) and are never required: nothing imports them unless
TRACING asks for traces, and a server asked for traces without them refuses to start,
naming the extra. The tracer provider is this module's, one per process, rather than
OpenTelemetry's global one: FastAPI's own telemetry follows the global providers, and
would trace every request a second time."""

import os
from collections.abc import Mapping
from typing import Any

from api import __version__
from api.config import ConfigError, Settings

EXTRA = "otel"
SERVICE_NAME = "agent-memory"

# The OpenTelemetry objects are typed Any: their packages may not be installed.
_tracer: Any = None
_provider: Any = None


def enabled() -> bool:
    return _tracer is not None


def check(settings: Settings) -> None:
    """Raise ConfigError, naming the extra, when TRACING asks for what is not installed."""
    if settings.tracing == "off":
        return
    try:
        import opentelemetry.sdk.trace

        if settings.tracing == "otlp":
            import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
    except ImportError as e:
        raise ConfigError(
            f"Invalid configuration: TRACING={settings.tracing} needs OpenTelemetry's SDK "
            f"and OTLP exporter, which are not installed ({e.name} is missing): install the "
            f"extra `{EXTRA}` (uv sync --extra {EXTRA}, or pip install "
            f"'agent-memory[{EXTRA}]'), or set TRACING=off"
        ) from e


def start(settings: Settings) -> Any:
    """The tracer provider TRACING asks for, now this process's (None when off). Spans go
    out in batches: to OTEL_EXPORTER_OTLP_ENDPOINT (OpenTelemetry's variables) or stdout."""
    if settings.tracing == "off":
        return None
    check(settings)
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    if settings.tracing == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter: Any = OTLPSpanExporter()
    else:
        exporter = ConsoleSpanExporter()
    name = os.environ.get("OTEL_SERVICE_NAME") or SERVICE_NAME
    provider = TracerProvider(
        resource=Resource.create({"service.name": name, "service.version": __version__})
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    use(provider)
    return provider


def use(provider: Any) -> None:
    """Trace through `provider` (an SDK TracerProvider) from now on; None stops tracing."""
    global _tracer, _provider
    _provider = provider
    _tracer = provider.get_tracer("agent-memory", __version__) if provider is not None else None


def stop(provider: Any) -> None:
    """Send what `provider` still holds and stop tracing through it."""
    if provider is None:
        return
    if provider is _provider:
        use(None)
    provider.shutdown()


def start_span(name: str, attributes: dict[str, Any], *, client: bool = True) -> Any:
    """A span under the current one (the request's), not made current: the caller ends it
    with `end_span`. Only called while `enabled()`."""
    from opentelemetry.trace import SpanKind

    kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
    return _tracer.start_span(name, kind=kind, attributes=attributes)


def end_span(span: Any, error: BaseException | None = None) -> None:
    if error is not None:
        from opentelemetry.trace import Status, StatusCode

        span.record_exception(error)
        code = getattr(error, "code", type(error).__name__)
        span.set_status(Status(StatusCode.ERROR, str(code)))
    span.end()


class RequestSpan:
    """The span of one request, current while the request is served, so that the spans of
    its table and LLM calls (and of the turn it starts) are its children."""

    def __init__(self, scope: Mapping[str, Any], request_id: str) -> None:  # an ASGI scope
        from opentelemetry import context, propagate, trace

        carrier = {
            name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]
        }
        parent = propagate.extract(carrier)
        self.method: str = scope["method"]
        self.span = _tracer.start_span(
            self.method,
            context=parent,
            kind=trace.SpanKind.SERVER,
            attributes={
                "http.request.method": self.method,
                "url.path": scope["path"],
                "url.scheme": scope.get("scheme", "http"),
                "request.id": request_id,
            },
        )
        self.token = context.attach(trace.set_span_in_context(self.span, parent))

    def end(self, route: str, status: int, error: BaseException | None) -> None:
        from opentelemetry import context
        from opentelemetry.trace import Status, StatusCode

        self.span.update_name(f"{self.method} {route}")
        self.span.set_attribute("http.route", route)
        self.span.set_attribute("http.response.status_code", status)
        if error is not None:
            self.span.record_exception(error)
        if status >= 500:
            self.span.set_status(Status(StatusCode.ERROR))
        self.span.end()
        context.detach(self.token)
