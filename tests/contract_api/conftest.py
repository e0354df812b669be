"""The app as a client sees it: local mode on a SQLite file in a temporary directory, the
offline model, the bundled static embedder; its OpenAPI document as the app serves it."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.config import Settings
from api.main import create_app

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
