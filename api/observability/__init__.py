"""Operability: request ids, logs, Prometheus metrics and optional OpenTelemetry traces.

request_id.py  the id of the request being served (a contextvar) and the logging filter
logs.py        text or JSON log lines (LOG_FORMAT), every line with its request id
metrics.py     the Prometheus metrics, defined once per process, and their rendering
middleware.py  the outermost middleware: request id, request metrics, access log, span
store.py       a Table that times its calls (metrics, and spans when tracing)
llm.py         an LLM call observed: time to first token, tokens, errors, span
tracing.py     OpenTelemetry, imported only when TRACING is set (the extra `otel`)
router.py      GET /metrics, guarded by METRICS
See docs/operations.md."""
