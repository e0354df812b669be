"""Every status any test saw an operation answer is one its operation documents.

The service counts each answer by method, route template and status (the Prometheus
counter behind /metrics, api/observability). At the end of a test session, whatever its
tests were, tests/conftest.py asks this module for the answers that counter holds (in each
of pytest-xdist's workers, summed up by its controller) whose
status the OpenAPI document (either auth mode's) does not list for that operation, and
fails the session on any: a route cannot come to answer a status its clients were not told
of, and no list of statuses per route is kept by hand beside the routes.

Left out on purpose: what is no documented operation (no route matched, /metrics, /mcp,
the web app's pages, and routes of apps a test builds for itself, whose templates the
service's document does not hold), HEAD and OPTIONS (the framework answers them), a 405
(a method its path does not take, with Allow: tests/contract_api/test_allow.py) and 499
(the client left; nothing was answered). Server errors are not left out: 500 and 503
(store failures injected by tests) are documented on every operation, a provider's
502/504 on the operations that call one; any other must be documented where it happens.
Requests a test sends to a server in another process are counted there, not here."""

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from api.observability import metrics

Observation = tuple[str, str, str]  # method, route template, status
NOT_OPERATIONS = frozenset({"HEAD", "OPTIONS"})
NOT_ANSWERS = frozenset({"405", "499"})
CONVERTER = re.compile(r"{(\w+):\w+}")  # /files/{path:path} is /files/{path} in the document
# What the conformance run's cases were answered (tests/contract_api/conformance.py),
# "METHOD /path status" -> how many: tests/conftest.py sums it up for the run's summary.
TALLY: Counter[str] = Counter()


def observed() -> dict[Observation, float]:
    """What this process answered so far, by method, route template and status."""
    found: dict[Observation, float] = {}
    for family in metrics.HTTP_REQUESTS.collect():
        for sample in family.samples:
            if sample.name.endswith("_total") and sample.value:
                labels = sample.labels
                found[(labels["method"], labels["route"], labels["status"])] = sample.value
    return found


def documented(documents: Iterable[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    """The statuses each operation documents, in any of the documents."""
    statuses: dict[tuple[str, str], set[str]] = {}
    for doc in documents:
        for path, operations in doc["paths"].items():
            for method, operation in operations.items():
                key = (method.upper(), path)
                statuses.setdefault(key, set()).update(operation["responses"])
    return statuses


def undocumented(answers: Iterable[Observation], documents: Iterable[dict[str, Any]]) -> list[str]:
    """`METHOD /route status` for each answer its operation does not document."""
    statuses = documented(documents)
    found = set()
    for method, route, status in answers:
        if method in NOT_OPERATIONS or status in NOT_ANSWERS:
            continue
        listed = statuses.get((method, CONVERTER.sub(r"{\1}", route)))
        if listed is not None and status not in listed and f"{status[0]}XX" not in listed:
            found.add(f"{method} {route} {status}")
    return sorted(found)
