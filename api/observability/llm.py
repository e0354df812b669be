"""One LLM call observed as it streams: time to its first text or tool call, its tokens,
how it ended, and a span while tracing. TurnLLM (api/runtime/turn.py) calls every provider
through this."""

import asyncio
import time
from collections.abc import AsyncIterator

from api.errors import AppError
from api.llm.types import ChatRequest, LLMEvent, LLMProvider, TextDelta, ToolCallEvent, Usage
from api.observability import metrics, tracing


async def observed(provider: LLMProvider, request: ChatRequest) -> AsyncIterator[LLMEvent]:
    """`provider.stream(request)`, measured."""
    name = provider.name
    span = None
    if tracing.enabled():
        span = tracing.start_span(
            f"chat {request.model}",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.system": name,
                "gen_ai.request.model": request.model,
            },
        )
    start = time.perf_counter()
    waiting = True  # for the first token
    outcome = "failed"
    error: BaseException | None = None
    try:
        async for event in provider.stream(request):
            if waiting and isinstance(event, TextDelta | ToolCallEvent):
                waiting = False
                metrics.LLM_TIME_TO_FIRST_TOKEN.labels(name).observe(time.perf_counter() - start)
            elif isinstance(event, Usage):
                metrics.LLM_TOKENS.labels(name, "input").inc(event.input_tokens)
                metrics.LLM_TOKENS.labels(name, "output").inc(event.output_tokens)
                if span is not None:
                    span.set_attribute("gen_ai.usage.input_tokens", event.input_tokens)
                    span.set_attribute("gen_ai.usage.output_tokens", event.output_tokens)
            yield event
        outcome = "completed"
    except (asyncio.CancelledError, GeneratorExit):
        outcome = "cancelled"  # the client left, or the caller stopped reading
        raise
    except BaseException as e:
        error = e
        code = e.code if isinstance(e, AppError) else "internal_error"
        metrics.LLM_ERRORS.labels(name, code).inc()
        raise
    finally:
        metrics.LLM_CALLS.labels(name, outcome).inc()
        metrics.LLM_SECONDS.labels(name).observe(time.perf_counter() - start)
        if span is not None:
            tracing.end_span(span, error)
