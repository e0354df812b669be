"""`serve --workers 2`: whichever worker answers a scrape reports what both served
(prometheus_client's multiprocess mode, in a directory `serve` makes and removes)."""

import time
from pathlib import Path

from tests.app.test_workers import call, two_workers
from tests.observability.conftest import Samples, parse, value

READY = {"method": "GET", "route": "/health/ready", "status": "200"}


def ready_count(samples: Samples) -> float:
    return value(samples, "agent_memory_http_requests_total", **READY)


def test_a_scrape_adds_up_every_workers_requests(tmp_path: Path) -> None:
    env = {"STORE": "sqlite", "SQLITE_PATH": str(tmp_path / "shared.db")}
    with two_workers(env) as root:
        for _ in range(12):  # a connection each: both workers take some
            assert call("GET", f"{root}/health/ready").status_code == 200
        # A request is counted as its answer ends, a moment after the client has it.
        deadline = time.monotonic() + 10
        while ready_count(parse(call("GET", f"{root}/metrics").text)) < 12:
            assert time.monotonic() < deadline, "the requests were never all counted"
            time.sleep(0.05)
        scrapes = [parse(call("GET", f"{root}/metrics").text) for _ in range(6)]
    for samples in scrapes:  # the same sum, whichever worker answered
        assert ready_count(samples) == 12
        assert value(samples, "agent_memory_http_request_duration_seconds_count", **READY) == 12
