"""The app in local mode on a SQLite file, a client that connects from loopback (as
Prometheus on the same machine would), and /metrics read back as numbers."""

import logging
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.config import Settings
from api.main import create_app
from api.observability import logs

LOCAL = "http://127.0.0.1"
LOOPBACK_PEER = ("127.0.0.1", 50000)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        store="sqlite",
        sqlite_path=tmp_path / "observed.db",
        dynamodb_table="observed",
        memory_embedding_backend="none",
    )


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    return create_app(settings)


def loopback_client(app: FastAPI, peer: tuple[str, int] = LOOPBACK_PEER) -> TestClient:
    return TestClient(app, base_url=LOCAL, client=peer, raise_server_exceptions=False)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with loopback_client(app) as client:
        yield client


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(client: TestClient) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return parse(response.text)


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value; 0 for one not there yet (a label set never observed)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def grew(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


@pytest.fixture
def log_lines() -> Iterator[StringIO]:
    """What the service logs, as the configured handler writes it (text unless a test
    configures JSON again); the root logger is put back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stream = StringIO()
    logs.configure("info", "text", stream)
    yield stream
    root.handlers[:] = handlers
    root.setLevel(level)


def label_sets(samples: Samples, name: str) -> list[dict[str, str]]:
    """The label sets a metric has samples for."""
    return [dict(labels) for (found, labels) in samples if found == name]
