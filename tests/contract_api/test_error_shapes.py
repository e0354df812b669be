"""`/v1` and `/memory/*` answer errors in their own shapes (OpenAI's, seed 004's), and those
carry the request's id too, the one sent back in X-Request-ID: inside OpenAI's `error`
object, beside seed 004's `success: false`."""

from fastapi.testclient import TestClient

SENT_ID = "contract-test-0001"


def test_openai_errors_carry_the_request_id(client: TestClient) -> None:
    refused = client.post("/v1/chat/completions", json={"model": "x", "messages": []})
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "invalid_value"
    assert error["param"] == "messages"
    assert error["request_id"] == refused.headers["X-Request-ID"]

    unknown = client.post(
        "/v1/chat/completions",
        json={"model": "no-such-agent", "messages": [{"role": "user", "content": "hi"}]},
        headers={"X-Request-ID": SENT_ID},
    )
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "model_not_found"
    assert unknown.json()["error"]["request_id"] == SENT_ID


def test_seed_004_errors_carry_the_request_id(client: TestClient) -> None:
    invalid = client.get("/memory/context", headers={"X-Request-ID": SENT_ID})
    assert invalid.status_code == 422
    body = invalid.json()
    assert body["success"] is False
    assert body["code"] == "validation_error"
    assert body["request_id"] == SENT_ID

    missing = client.get("/memory/runs/no-such-run")
    assert missing.status_code == 404
    body = missing.json()
    assert (body["success"], body["code"]) == (False, "memory_run_not_found")
    assert body["request_id"] == missing.headers["X-Request-ID"]


def test_a_refusal_before_the_route_keeps_the_common_shape(client: TestClient) -> None:
    """The request limits answer before any route, so in the API's own shape, as the
    contract documents it for these routes too."""
    too_large = client.post(
        "/v1/chat/completions",
        content=b"{}",
        headers={"Content-Length": str(10**12), "Content-Type": "application/json"},
    )
    assert too_large.status_code == 413
    body = too_large.json()
    assert body["code"] == "payload_too_large"
    assert body["request_id"] == too_large.headers["X-Request-ID"]
