"""Documents tests: uploads over HTTP, read back once their background processing ends."""

import time
from typing import Any

import httpx2

PROCESSING_SECONDS = 60.0  # the onnx model embeds a few passages in well under a second


def upload(
    client: httpx2.Client,
    agent_id: str,
    name: str,
    data: bytes,
    content_type: str | None = None,
) -> httpx2.Response:
    file: tuple[str, bytes] | tuple[str, bytes, str] = (
        (name, data) if content_type is None else (name, data, content_type)
    )
    return client.post(f"/agents/{agent_id}/documents", files={"file": file})


def processed(client: httpx2.Client, agent_id: str, document_id: str) -> dict[str, Any]:
    """The document once its processing ended (ready or failed)."""
    deadline = time.monotonic() + PROCESSING_SECONDS
    while True:
        got = client.get(f"/agents/{agent_id}/documents/{document_id}")
        assert got.status_code == 200, got.text
        body: dict[str, Any] = got.json()
        if body["state"] != "processing":
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.02)  # the worker runs on the app's loop, in another thread


def ready(
    client: httpx2.Client, agent_id: str, name: str, data: bytes, content_type: str | None = None
) -> dict[str, Any]:
    sent = upload(client, agent_id, name, data, content_type)
    assert sent.status_code == 202, sent.text
    assert sent.json()["state"] == "processing"
    body = processed(client, agent_id, sent.json()["id"])
    assert body["state"] == "ready", body
    return body


def search(client: httpx2.Client, agent_id: str, query: str, **params: Any) -> list[dict[str, Any]]:
    found = client.get(f"/agents/{agent_id}/documents/search", params={"query": query, **params})
    assert found.status_code == 200, found.text
    passages: list[dict[str, Any]] = found.json()["passages"]
    return passages
