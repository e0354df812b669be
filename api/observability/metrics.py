"""The service's Prometheus metrics, defined once per process, and their rendering.

Labels are bounded on purpose: a route is its template (`/agents/{agent_id}`, never the
path), a method outside the usual ones is OTHER, a provider, an engine, an operation or an
error code comes from a fixed set. Names and what to alert on: docs/operations.md.

Several worker processes (`serve --workers N`) share their metrics through prometheus_client's
multiprocess mode: `serve` points PROMETHEUS_MULTIPROC_DIR at a fresh directory before the
workers start, each worker writes its values there, and whichever worker answers a scrape
adds them all up. Gauges are summed over the workers alive."""

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Literal

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)

# No `_created` series beside every counter and histogram.
disable_created_metrics()  # type: ignore[no-untyped-call]

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"  # the route label of a request no route matched

# Requests include streamed turns, whose response lasts as long as the turn.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
LLM_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
SEARCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)

# --- HTTP ----------------------------------------------------------------------------------
HTTP_REQUESTS = Counter(
    "agent_memory_http_requests",
    "Requests answered, by method, route template and status.",
    ["method", "route", "status"],
)
HTTP_SECONDS = Histogram(
    "agent_memory_http_request_duration_seconds",
    "From the request's arrival to the end of its response (a streamed turn: its end).",
    ["method", "route", "status"],
    buckets=REQUEST_BUCKETS,
)

# --- Turns ---------------------------------------------------------------------------------
TURNS_STARTED = Counter(
    "agent_memory_turns_started", "Turns that began to run, by LLM provider.", ["provider"]
)
TURNS_FINISHED = Counter(
    "agent_memory_turns_finished",
    "Turns that ended, by provider and outcome (completed, failed, interrupted).",
    ["provider", "outcome"],
)
TURN_FAILURES = Counter(
    "agent_memory_turn_failures",
    "Failed turns by provider and error code (provider_auth, provider_unavailable, ...).",
    ["provider", "code"],
)

# --- LLM calls -----------------------------------------------------------------------------
LLM_CALLS = Counter(
    "agent_memory_llm_calls",
    "LLM calls, by provider and outcome (completed, failed, cancelled).",
    ["provider", "outcome"],
)
LLM_ERRORS = Counter(
    "agent_memory_llm_errors", "Failed LLM calls by provider and error code.", ["provider", "code"]
)
LLM_SECONDS = Histogram(
    "agent_memory_llm_call_duration_seconds",
    "One LLM call, from the request to its last event.",
    ["provider"],
    buckets=LLM_BUCKETS,
)
LLM_TIME_TO_FIRST_TOKEN = Histogram(
    "agent_memory_llm_time_to_first_token_seconds",
    "From an LLM call's request to its first text or tool call.",
    ["provider"],
    buckets=LLM_BUCKETS,
)
LLM_TOKENS = Counter(
    "agent_memory_llm_tokens",
    "Tokens the providers reported, by provider and direction (input, output).",
    ["provider", "direction"],
)

# --- Store ---------------------------------------------------------------------------------
STORE_SECONDS = Histogram(
    "agent_memory_store_call_duration_seconds",
    "One call to the table, by operation (get, query, transact_write, ...) and engine.",
    ["operation", "engine"],
    buckets=STORE_BUCKETS,
)
STORE_ERRORS = Counter(
    "agent_memory_store_errors",
    "Table calls that raised, by operation, engine and error code (condition_failed is "
    "optimistic concurrency at work; store_unavailable and store_throttled are not).",
    ["operation", "engine", "code"],
)

# --- Search --------------------------------------------------------------------------------
SEARCH_SECONDS = Histogram(
    "agent_memory_search_duration_seconds",
    "One search, version read and index catch-up included, by mode.",
    ["mode"],
    buckets=SEARCH_BUCKETS,
)
SEARCH_INDEXES = Gauge(
    "agent_memory_search_indexes",
    "Per-agent search indexes held in memory.",
    multiprocess_mode="livesum",
)
SEARCH_INDEX_BYTES = Gauge(
    "agent_memory_search_index_bytes",
    "Estimated memory of the search indexes held (SEARCH_INDEX_MEMORY_MB bounds it).",
    multiprocess_mode="livesum",
)
SEARCH_INDEX_DOCUMENTS = Gauge(
    "agent_memory_search_index_documents",
    "Documents (memories and messages) in the search indexes held.",
    multiprocess_mode="livesum",
)

# --- Background runs -----------------------------------------------------------------------
BACKGROUND_RUNS = Gauge(
    "agent_memory_background_runs",
    "Runs this process is working on, by kind (turn, memory) and state.",
    ["kind", "state"],
    multiprocess_mode="livesum",
)
BACKGROUND_RUNS_SWEPT = Counter(
    "agent_memory_background_runs_swept",
    "Runs left running by a stopped process and ended as interrupted, by kind.",
    ["kind"],
)

TurnOutcome = Literal["completed", "failed", "interrupted"]
_TURNS_RUNNING = BACKGROUND_RUNS.labels("turn", "running")
_MEMORY_RUNS_RUNNING = BACKGROUND_RUNS.labels("memory", "running")


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    labels = (method if method in METHODS else "OTHER", route, str(status))
    HTTP_REQUESTS.labels(*labels).inc()
    HTTP_SECONDS.labels(*labels).observe(seconds)


def turn_started(provider: str) -> None:
    TURNS_STARTED.labels(provider).inc()
    _TURNS_RUNNING.inc()


def turn_finished(provider: str, outcome: TurnOutcome, failure_code: str | None) -> None:
    _TURNS_RUNNING.dec()
    TURNS_FINISHED.labels(provider, outcome).inc()
    if outcome == "failed":
        TURN_FAILURES.labels(provider, failure_code or "internal_error").inc()


@contextmanager
def memory_run() -> Iterator[None]:
    """A seed 004 memory run being worked on by this process, for as long as it is."""
    _MEMORY_RUNS_RUNNING.inc()
    try:
        yield
    finally:
        _MEMORY_RUNS_RUNNING.dec()


class SearchIndexSizes:
    """What one search engine last reported of its indexes: the gauges move by the
    difference, so that every engine of a process adds up (tests run many)."""

    def __init__(self) -> None:
        self._documents: dict[str, int] = {}
        self._last = (0, 0, 0)

    def report(self, sizes: Mapping[str, int], kept: str | None = None, documents: int = 0) -> None:
        """`sizes`: the bytes of every index the engine holds, by agent; `kept`: the agent
        whose index was just used, with its number of documents."""
        if kept is not None:
            self._documents[kept] = documents
        for gone in self._documents.keys() - sizes.keys():
            del self._documents[gone]
        now = (len(sizes), sum(sizes.values()), sum(self._documents.values()))
        for gauge, before, after in zip(
            (SEARCH_INDEXES, SEARCH_INDEX_BYTES, SEARCH_INDEX_DOCUMENTS),
            self._last,
            now,
            strict=True,
        ):
            if after != before:
                gauge.inc(after - before)
        self._last = now


def render() -> bytes:
    """The exposition text: this process's metrics, or every worker's in multiprocess mode
    (reads files: call it off the event loop)."""
    directory = os.environ.get(MULTIPROCESS_DIR)
    if not directory:
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    return generate_latest(registry)


def process_exiting() -> None:
    """In multiprocess mode, this worker's gauges stop counting (it is shutting down)."""
    if os.environ.get(MULTIPROCESS_DIR):
        multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]
