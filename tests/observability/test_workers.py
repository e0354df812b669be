"""`serve --workers 2`: whichever worker answers a scrape reports what both served
(prometheus_client's multiprocess mode, in a directory `serve` makes and removes)."""

from pathlib import Path

from tests.app.test_workers import call, two_workers
from tests.observability.conftest import parse, value


def test_a_scrape_adds_up_every_workers_requests(tmp_path: Path) -> None:
    env = {"STORE": "sqlite", "SQLITE_PATH": str(tmp_path / "shared.db")}
    with two_workers(env) as root:
        for _ in range(12):  # a connection each: both workers take some
            assert call("GET", f"{root}/health/ready").status_code == 200
        scrapes = [parse(call("GET", f"{root}/metrics").text) for _ in range(4)]
    for samples in scrapes:  # the same sum whichever worker answered
        ready = {"method": "GET", "route": "/health/ready", "status": "200"}
        assert value(samples, "agent_memory_http_requests_total", **ready) == 12
        assert value(samples, "agent_memory_http_request_duration_seconds_count", **ready) == 12
