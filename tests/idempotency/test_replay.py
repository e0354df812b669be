"""A request retried with its Idempotency-Key gets the first answer and is not run again;
on every engine."""

from fastapi.testclient import TestClient

from api.idempotency.models import CLAIM_SECONDS, KEEP_SECONDS, IdempotencyRecord, fingerprint
from api.idempotency.models import key_hash as hash_of
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from tests.idempotency.conftest import key, records


def new_agent(client: TestClient, name: str) -> str:
    created = client.post("/agents", json={"name": name})
    assert created.status_code == 201, created.text
    agent_id: str = created.json()["id"]
    return agent_id


def test_a_retried_post_gets_the_first_answer_and_makes_one_agent(client: TestClient) -> None:
    first = client.post("/agents", json={"name": "Helper"}, headers=key("create-helper"))
    assert first.status_code == 201, first.text
    assert "idempotent-replayed" not in first.headers
    again = client.post("/agents", json={"name": "Helper"}, headers=key("create-helper"))
    # Run again, the request would find the name taken and answer 200: this is the first answer.
    assert again.status_code == 201
    assert again.content == first.content
    assert again.headers["content-type"] == "application/json"
    assert again.headers["idempotent-replayed"] == "true"
    assert [a["id"] for a in client.get("/agents").json()] == [first.json()["id"]]
    (record,) = records(client)
    assert (record.state, record.status) == ("done", 201)
    assert record.key_hash == hash_of("create-helper")  # the key itself is not stored


def test_the_key_of_another_request_is_refused(client: TestClient) -> None:
    assert client.post("/agents", json={"name": "One"}, headers=key("k1")).status_code == 201
    for method, path, body in (
        ("POST", "/agents", {"name": "Two"}),  # another body
        ("POST", "/agents?x=1", {"name": "One"}),  # another query
        # Another method here has no route: the app's 405 stands (test_edges.py).
        ("POST", "/conversations", {"name": "One"}),  # another path
    ):
        reused = client.request(method, path, json=body, headers=key("k1"))
        assert reused.status_code == 422, (method, path, reused.text)
        assert reused.json()["code"] == "idempotency_key_reused"
        assert "different request" in reused.json()["message"]
    assert [a["name"] for a in client.get("/agents").json()] == ["One"]


def test_a_final_refusal_is_kept(client: TestClient) -> None:
    body = {"name": "Claude", "provider": "anthropic"}
    refused = client.post("/agents", json=body, headers=key("claude"))
    assert refused.status_code == 400
    assert refused.json()["code"] == "provider_not_configured"
    saved = client.put("/settings/providers/anthropic", json={"api_key": "sk-ant-test-123456"})
    assert saved.status_code == 200, saved.text
    # The same request would now succeed; its retry still gets the first answer.
    again = client.post("/agents", json=body, headers=key("claude"))
    assert again.status_code == 400
    assert again.json() == refused.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert client.get("/agents").json() == []
    assert client.post("/agents", json=body, headers=key("claude-2")).status_code == 201

    missing = client.patch("/agents/nope", json={"name": "x"}, headers=key("patch-missing"))
    assert missing.status_code == 404
    replayed = client.patch("/agents/nope", json={"name": "x"}, headers=key("patch-missing"))
    assert (replayed.status_code, replayed.json()) == (404, missing.json())
    assert replayed.headers["idempotent-replayed"] == "true"


def test_a_conflict_is_not_kept_and_the_retry_runs_again(client: TestClient) -> None:
    mine = new_agent(client, "Mine")
    other = new_agent(client, "Taken")
    rename = {"name": "taken"}
    conflict = client.patch(f"/agents/{mine}", json=rename, headers=key("rename"))
    assert conflict.status_code == 409
    assert conflict.json()["code"] == "agent_name_taken"
    assert records(client) == []  # the claim was freed
    assert client.delete(f"/agents/{other}").status_code == 204
    retried = client.patch(f"/agents/{mine}", json=rename, headers=key("rename"))
    assert retried.status_code == 200, retried.text
    assert retried.json()["name"] == "taken"
    assert "idempotent-replayed" not in retried.headers


def test_a_retried_delete_does_not_delete_again(client: TestClient) -> None:
    agent = new_agent(client, "Lines")
    lines = f"/agents/{agent}/memory/blocks/human/lines"
    for content in ("first", "second", "third"):
        assert client.post(lines, json={"content": content}).status_code == 201
    # Deleting line 1 twice would take "second" too.
    deleted = client.delete(f"{lines}/1", headers=key("delete-line"))
    assert deleted.status_code == 200, deleted.text
    again = client.delete(f"{lines}/1", headers=key("delete-line"))
    assert (again.status_code, again.content) == (200, deleted.content)
    assert again.headers["etag"] == deleted.headers["etag"]
    assert again.headers["idempotent-replayed"] == "true"
    block = client.get(f"/agents/{agent}/memory/blocks/human").json()
    assert block["lines"] == ["second", "third"]

    gone = client.delete(f"/agents/{agent}", headers=key("delete-agent"))
    assert gone.status_code == 204
    replayed = client.delete(f"/agents/{agent}", headers=key("delete-agent"))
    assert (replayed.status_code, replayed.content) == (204, b"")  # run again: a 404
    assert replayed.headers["idempotent-replayed"] == "true"


def test_put_and_patch_are_replayed(client: TestClient) -> None:
    agent = new_agent(client, "Editable")
    line = f"/agents/{agent}/memory/blocks/human/lines/1"
    client.post(f"/agents/{agent}/memory/blocks/human/lines", json={"content": "old"})
    put = client.put(line, json={"content": "mine"}, headers=key("put"))
    assert put.status_code == 200, put.text
    assert client.put(line, json={"content": "later"}).status_code == 200
    replayed = client.put(line, json={"content": "mine"}, headers=key("put"))
    assert (replayed.status_code, replayed.content) == (200, put.content)
    assert replayed.headers["idempotent-replayed"] == "true"
    block = client.get(f"/agents/{agent}/memory/blocks/human").json()
    assert block["lines"] == ["later"]  # the retry did not write "mine" over it

    patch = client.patch(f"/agents/{agent}", json={"name": "Sage"}, headers=key("patch"))
    assert patch.status_code == 200
    assert client.patch(f"/agents/{agent}", json={"name": "Later"}).status_code == 200
    replayed = client.patch(f"/agents/{agent}", json={"name": "Sage"}, headers=key("patch"))
    assert (replayed.status_code, replayed.json()["name"]) == (200, "Sage")
    assert client.get(f"/agents/{agent}").json()["name"] == "Later"


def test_a_claim_left_by_a_dead_process_is_taken_over_once_it_lapses(
    client: TestClient, clock: FrozenClock
) -> None:
    body = b'{"name": "Orphan"}'
    now = clock.now()
    orphan = IdempotencyRecord(
        email="local@localhost",
        key_hash=hash_of("orphan"),
        fingerprint=fingerprint("POST", "/agents", b"", body),
        holder="a-process-that-died",
        state="running",
        until=int(now) + CLAIM_SECONDS,
        ttl=int(now) + KEEP_SECONDS,
    )
    repos: Repositories = client.app_state["repos"]
    assert client.portal is not None
    assert client.portal.call(repos.idempotency.claim, orphan)
    headers = {**key("orphan"), "content-type": "application/json"}

    busy = client.post("/agents", content=body, headers=headers)
    assert busy.status_code == 409
    assert busy.json()["code"] == "idempotency_request_in_progress"
    assert busy.headers["retry-after"] == "1"
    assert client.get("/agents").json() == []

    clock.advance(CLAIM_SECONDS)  # its `until` has come, unrenewed
    taken = client.post("/agents", content=body, headers=headers)
    assert taken.status_code == 201, taken.text
    (record,) = records(client)
    assert (record.state, record.status) == ("done", 201)
    assert record.holder != orphan.holder
    again = client.post("/agents", content=body, headers=headers)
    assert (again.status_code, again.content) == (201, taken.content)


def test_an_answer_is_kept_for_a_day(client: TestClient, clock: FrozenClock) -> None:
    first = client.post("/agents", json={"name": "Daily"}, headers=key("daily"))
    assert first.status_code == 201
    clock.advance(KEEP_SECONDS - 60)
    assert client.post("/agents", json={"name": "Daily"}, headers=key("daily")).status_code == 201
    clock.advance(120)
    # Forgotten: the request runs again, and finds the agent it made the day before.
    later = client.post("/agents", json={"name": "Daily"}, headers=key("daily"))
    assert later.status_code == 200
    assert "idempotent-replayed" not in later.headers
    assert later.json()["id"] == first.json()["id"]


def test_requests_without_a_key_and_reads_are_left_alone(client: TestClient) -> None:
    assert client.post("/agents", json={"name": "Plain"}).status_code == 201
    assert client.post("/agents", json={"name": "Plain"}).status_code == 200  # run again
    assert client.get("/agents", headers=key("a-read")).status_code == 200
    assert client.get("/agents", headers=key("a-read")).headers.get("idempotent-replayed") is None
    assert records(client) == []
