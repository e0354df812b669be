"""Seed 004's memory layer over HTTP: the app in local mode, its memory runs worked by the
in-process queue or by SQS FIFO (moto), the offline model unless a test says otherwise."""

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from api.config import Settings
from api.kit.clock import FrozenClock
from api.queue import sqs
from tests.runtime.conftest import running

QUEUES = ["local", "sqs"]

# Seed 004's cURL workflow, as the seed writes it.
WORKFLOW_BLOCKS: dict[str, Any] = {
    "user_id": "n8n_user_007",
    "blocks": [
        {
            "label": "user_profile",
            "description": "Information about the user, their role, and preferences.",
            "value": "User is a marketing manager named Alex.",
        },
        {
            "label": "current_project",
            "description": "Details about the project Alex is currently working on.",
            "value": "Project: Q4 product launch.",
        },
    ],
    "reset": True,
}
WORKFLOW_MESSAGES: list[dict[str, str]] = [
    {"role": "user", "content": "What's the main goal for the Q4 launch?"},
    {"role": "assistant", "content": "The main goal is to increase user acquisition by 15%."},
    {"role": "user", "content": "Got it. And what's my personal preference for email tone?"},
    {
        "role": "assistant",
        "content": "Your profile notes you prefer a professional but friendly tone.",
    },
]


def settings_for(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(sqlite_path=tmp_path / "seed004.db", encryption_key="k" * 40, **overrides)


@pytest.fixture
def sqs_queue_url() -> Iterator[str]:
    with mock_aws():
        yield sqs.create_queues(sqs.client("us-east-1"), f"memory-runs-{uuid.uuid4().hex[:8]}")


def queue_settings(kind: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    if kind == "local":
        return {}
    url: str = request.getfixturevalue("sqs_queue_url")
    return {"memory_queue": "sqs", "sqs_queue_url": url, "memory_queue_wait_seconds": 1}


@pytest.fixture
def api(tmp_path: Path, clock: FrozenClock) -> Iterator[TestClient]:
    with running(settings_for(tmp_path), clock) as client:
        yield client


@pytest.fixture(params=QUEUES)
def queued(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock
) -> Iterator[TestClient]:
    """The app with its memory runs on each queue adapter."""
    with running(settings_for(tmp_path, **queue_settings(request.param, request)), clock) as c:
        yield c


def initialize(client: TestClient, user_id: str = "customer_123", **body: Any) -> dict[str, Any]:
    made = client.post("/memory/initialize", json={"user_id": user_id, **body})
    assert made.status_code == 200, made.text
    found: dict[str, Any] = made.json()
    return found


def add(
    client: TestClient, messages: list[dict[str, str]], user_id: str = "customer_123", **body: Any
) -> dict[str, Any]:
    added = client.post("/memory/add", json={"user_id": user_id, "messages": messages, **body})
    assert added.status_code in (200, 202), added.text
    found: dict[str, Any] = added.json()
    return found


def said(role: str, content: str) -> dict[str, str]:
    return {"role": role, "content": content}


def run_of(client: httpx2.Client, run_id: str) -> dict[str, Any]:
    got = client.get(f"/memory/runs/{run_id}")
    assert got.status_code == 200, got.text
    found: dict[str, Any] = got.json()
    return found


def until_ended(client: httpx2.Client, run_id: str, seconds: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while (run := run_of(client, run_id))["status"] not in ("completed", "failed"):
        assert time.monotonic() < deadline, f"the run never ended: {run}"
        time.sleep(0.02)
    return run


def context(client: TestClient, user_id: str = "customer_123", **params: Any) -> dict[str, Any]:
    got = client.get("/memory/context", params={"user_id": user_id, **params})
    assert got.status_code == 200, got.text
    found: dict[str, Any] = got.json()
    return found


def seed_error(response: Any, status: int, code: str) -> dict[str, Any]:
    """An error in seed 004's shape, with our code beside it."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["success"] is False, body
    assert body["code"] == code, body
    assert body["message"]
    return body
