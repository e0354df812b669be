"""Superseding another tenant's archival memory through seed 004's /memory/add is refused
as unknown (404 `archival_memory_not_found`), and the memory stays as it was: a memory id
is looked up in the caller's own subject only. (The agents' REST routes have their probes
in test_isolation.py; the MCP tools theirs in tests/mcp/test_supersession.py.)"""

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.auth.conftest import access_token, as_user, bearer, browser, sign_in
from tests.fakes.oidc import FakeGoogle

QUESTION = {"user_id": "customer_123", "query": "where does she live", "include_history": "true"}


@pytest.fixture
def tenants(app: FastAPI, google: FakeGoogle) -> Iterator[tuple[TestClient, TestClient]]:
    """Ada and Bob, each signed in and holding their access token, each with a subject
    `customer_123` of their own."""
    with browser(app) as ada, browser(app) as bob:
        for client, sub, email in (
            (ada, "1111", "ada@example.com"),
            (bob, "2222", "bob@example.com"),
        ):
            as_user(google, sub, email)
            sign_in(client)
            client.headers.update(bearer(access_token(client)))
            made = client.post("/memory/initialize", json={"user_id": "customer_123"})
            assert made.status_code == 200, made.text
        yield ada, bob


def add(client: TestClient, message: dict[str, Any]) -> Any:
    return client.post("/memory/add", json={"user_id": "customer_123", "messages": [message]})


def test_another_tenants_memory_cannot_be_superseded(
    tenants: tuple[TestClient, TestClient],
) -> None:
    ada, bob = tenants
    added = add(ada, {"role": "user", "content": "Ada's customer lives in Lisbon"})
    assert added.status_code == 200, added.text
    (memory,) = ada.get("/memory/search", params=QUESTION).json()["memories"]
    refused = add(
        bob,
        {"role": "user", "content": "She lives in Porto", "supersedes": [memory["id"]]},
    )
    assert refused.status_code == 404, refused.text
    assert refused.json()["code"] == "archival_memory_not_found"
    assert refused.json()["success"] is False
    # Ada's memory is current still, and Bob's subject holds nothing of the refused add.
    (same,) = ada.get("/memory/search", params=QUESTION).json()["memories"]
    assert same["superseded_by"] is None
    assert bob.get("/memory/search", params=QUESTION).json()["results"] == []
