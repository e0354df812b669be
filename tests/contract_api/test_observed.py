"""The check tests/conftest.py runs when a session ends: an answer whose status its
operation does not document is reported, a documented one is not, and what is not an
operation of the document is left to other tests."""

import copy
from typing import Any

from fastapi.testclient import TestClient

from tests.contract_api.observed import documented, observed, undocumented


def test_an_undocumented_status_is_reported(client: TestClient, openapi: dict[str, Any]) -> None:
    assert client.get("/agents/x1").status_code == 404
    assert client.get("/agents").status_code == 200
    answers = observed()
    assert ("GET", "/agents/{agent_id}", "404") in answers
    assert undocumented(answers, [openapi]) == []  # as it stands, every one is documented

    # The same answers against a document where the route forgot its 404.
    forgetful = copy.deepcopy(openapi)
    del forgetful["paths"]["/agents/{agent_id}"]["get"]["responses"]["404"]
    assert undocumented(answers, [forgetful]) == ["GET /agents/{agent_id} 404"]


def test_a_status_documented_in_either_mode_is_documented(openapi: dict[str, Any]) -> None:
    google = copy.deepcopy(openapi)
    google["paths"]["/agents"]["get"]["responses"]["418"] = {"description": "a teapot"}
    answers = [("GET", "/agents", "418")]
    assert undocumented(answers, [openapi]) == ["GET /agents 418"]
    assert undocumented(answers, [openapi, google]) == []
    assert "418" in documented([openapi, google])[("GET", "/agents")]


def test_what_is_no_operation_of_the_document_is_left_out(openapi: dict[str, Any]) -> None:
    answers = [
        ("GET", "unmatched", "404"),  # no route matched
        ("GET", "/metrics", "403"),  # not in the document
        ("PUT", "/agents", "405"),  # a method the path does not take
        ("HEAD", "/agents", "405"),
        ("POST", "/chat", "499"),  # the client left
    ]
    assert undocumented(answers, [openapi]) == []
