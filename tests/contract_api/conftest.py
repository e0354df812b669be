"""The app as a client sees it: local mode on a SQLite file in a temporary directory, the
offline model, the bundled static embedder; its OpenAPI document as the app serves it."""

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app

# What the conformance run's cases were answered: "METHOD /path status" -> how many.
TALLY: Counter[str] = Counter()
# Schemathesis's ASGI client sends `Host: testserver`; the local guard must take it.
HOST = "testserver"


def contract_settings(directory: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "store": "sqlite",
        "sqlite_path": directory / "contract.db",
        "dynamodb_table": "contract",
        "memory_embedding_backend": "static",  # bundled, offline: semantic search answers
        "allowed_hosts": f"localhost,127.0.0.1,{HOST}",
        **overrides,
    }
    return Settings(**values)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    return create_app(contract_settings(tmp_path_factory.mktemp("contract")))


@pytest.fixture(scope="module")
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, base_url=f"http://{HOST}", raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def openapi(client: TestClient) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    doc: dict[str, Any] = response.json()
    return doc


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The conformance run in one line, as CI shows it: operations, cases, statuses."""
    if not TALLY:
        return
    operations = {key.rsplit(" ", 1)[0] for key in TALLY}
    statuses: Counter[str] = Counter()
    for key, count in TALLY.items():
        statuses[key.rsplit(" ", 1)[1]] += count
    by_status = ", ".join(f"{status}: {statuses[status]}" for status in sorted(statuses))
    terminalreporter.write_line(
        f"contract: {len(operations)} operations, {sum(TALLY.values())} cases answered and "
        f"checked ({by_status})"
    )
