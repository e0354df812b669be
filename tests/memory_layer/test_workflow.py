"""Seed 004's cURL workflow over HTTP, and its initialize and read endpoints."""

from pathlib import Path

from fastapi.testclient import TestClient

from api.kit.clock import FrozenClock
from tests.memory_layer.conftest import (
    WORKFLOW_BLOCKS,
    WORKFLOW_MESSAGES,
    add,
    context,
    initialize,
    said,
    seed_error,
    settings_for,
)
from tests.runtime.conftest import running

WORKFLOW_CONTEXT = """\
<human description="Information about the human user."></human>

<user_profile description="Information about the user, their role, and preferences.">\
User is a marketing manager named Alex.
Prefers: a professional but friendly tone</user_profile>

<current_project description="Details about the project Alex is currently working on.">\
Project: Q4 product launch.
Goal: increase user acquisition by 15%</current_project>

<summary description="A rolling summary of the conversation.">4 messages. \
User: What's the main goal for the Q4 launch? | \
Got it. And what's my personal preference for email tone?</summary>

<relevant_memories>
1. User: What's the main goal for the Q4 launch?
2. Assistant: The main goal is to increase user acquisition by 15%.
</relevant_memories>"""


def test_the_seeds_workflow(api: TestClient) -> None:
    # 1. Initialize a new user with custom blocks.
    made = api.post("/memory/initialize-with-blocks", json=WORKFLOW_BLOCKS)
    assert made.status_code == 200, made.text
    assert made.json() == {
        "success": True,
        "message": "Initialized memory for n8n_user_007",
        "agent_id": made.json()["agent_id"],
        "blocks_created": 4,
    }
    # 2. Add a conversation, waiting for its memory run.
    added = api.post(
        "/memory/add",
        json={
            "user_id": "n8n_user_007",
            "messages": WORKFLOW_MESSAGES,
            "store_in_archival": True,
            "wait_for_completion": True,
        },
    )
    assert added.status_code == 200, added.text
    assert added.json() == {
        "success": True,
        "run_id": added.json()["run_id"],
        "message": "Processed 4 messages",
        "messages_count": 4,
        "status": "completed",
        "replaced": [],  # nothing was asked to be replaced (`supersedes`)
        "not_replaced": [],
        "notes": [],
    }
    # 3. The full context for a new message: the blocks as the run left them (the
    # offline model noted the goal in current_project, the tone in user_profile, and
    # summed the conversation up), then the relevant memories.
    got = api.get(
        "/memory/context",
        params={"user_id": "n8n_user_007", "query": "remind me about the launch goal"},
    )
    assert got.status_code == 200, got.text
    found = got.json()
    assert found["combined_context"] == WORKFLOW_CONTEXT
    assert (
        found["user_context"] == '<human description="Information about the human user."></human>'
    )
    assert found["summary"].startswith(
        '<summary description="A rolling summary of the conversation.">4 messages.'
    )
    assert found["relevant_memories"] == [
        "User: What's the main goal for the Q4 launch?",
        "Assistant: The main goal is to increase user acquisition by 15%.",
    ]  # not the question about email tone: it neither shares a word nor means the same
    assert found["success"] is True
    assert found["pending_runs"] == 0
    # Provenance: each memory's id, source, role and score, best first.
    memories = found["memories"]
    assert [(m["source"], m["role"]) for m in memories] == [
        ("archival", "user"),
        ("archival", "assistant"),
    ]
    assert [m["score"] for m in memories] == sorted((m["score"] for m in memories), reverse=True)
    assert all(m["id"] and m["created_at"] for m in memories)


def test_initialize_has_human_and_summary_and_is_idempotent(api: TestClient) -> None:
    first = initialize(api, user_info="This is Sarah. She is a new customer.")
    assert first == {
        "success": True,
        "message": "Initialized memory for customer_123",
        "agent_id": first["agent_id"],
        "blocks_created": 2,
    }
    assert context(api)["combined_context"] == (
        '<human description="Information about the human user.">This is Sarah. She is a new '
        "customer.</human>\n\n"
        '<summary description="A rolling summary of the conversation."></summary>'
    )
    # Again without reset: the same subject, nothing changed.
    before = api.get(f"/agents/{first['agent_id']}/memory/blocks").json()
    again = initialize(api, user_info="Someone else entirely.")
    assert again == first
    assert api.get(f"/agents/{first['agent_id']}/memory/blocks").json() == before
    # The subject's agent is one of the caller's agents.
    agents = api.get("/agents").json()
    assert [(a["id"], a["name"]) for a in agents] == [(first["agent_id"], "Memory: customer_123")]


def test_reset_deletes_and_makes_anew(api: TestClient) -> None:
    first = initialize(api, user_info="Old info")
    add(api, [said("user", "I prefer tea")])
    fresh = initialize(api, user_info="New info", reset=True)
    assert fresh["agent_id"] != first["agent_id"]
    assert api.get(f"/agents/{first['agent_id']}").status_code == 404
    found = context(api, query="tea")
    assert found["combined_context"].startswith(
        '<human description="Information about the human user.">New info</human>'
    )
    assert found["relevant_memories"] == []
    searched = api.get("/memory/search", params={"user_id": "customer_123", "query": "tea"})
    assert searched.json()["results"] == []


def test_custom_blocks_keep_description_and_char_limit(api: TestClient) -> None:
    body = {
        "user_id": "customer_123",
        "blocks": [
            {
                "label": "customer_profile",
                "description": "Basic customer info and support tier.",
                "value": "Premium subscriber. Joined 2024.",
                "char_limit": 50,
            },
            {
                "label": "policies",
                "description": "Company policies relevant to this customer.",
                "value": "Refund policy: 30 days. Premium support: 24/7.",
                "char_limit": 10000,
            },
        ],
    }
    made = api.post("/memory/initialize-with-blocks", json=body)
    assert made.json()["blocks_created"] == 4
    agent_id = made.json()["agent_id"]
    profile = api.get(f"/agents/{agent_id}/memory/blocks/customer_profile").json()
    assert profile["description"] == "Basic customer info and support tier."
    # 32 of 50 characters: under 80%, no warning yet.
    assert profile["warning"] is False
    lines = f"/agents/{agent_id}/memory/blocks/customer_profile/lines"
    # 32 + 9 = 41 characters: 82% of the limit, warned as for words.
    added = api.post(lines, json={"content": "Tier: A."})
    assert added.status_code == 201, added.text
    assert added.json()["block"]["warning"] is True
    assert added.json()["block"]["percent_used"] == 80
    # Past the limit: refused, nothing changed.
    refused = api.post(lines, json={"content": "A note much too long for what is left."})
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "block_too_large"
    assert "at most 50" in refused.json()["message"]
    found = context(api)["combined_context"]
    assert found.index("<customer_profile") < found.index("<policies") < found.index("<summary")


def test_user_context_and_summary_in_both_formats(api: TestClient) -> None:
    initialize(api, user_info="Premium subscriber. Joined 2024.")
    add(api, [said("user", "Hi, I need to return an item.")])
    raw = api.get("/memory/user-context", params={"user_id": "customer_123", "format": "raw"})
    assert raw.json() == {"success": True, "context": "Premium subscriber. Joined 2024."}
    xml = api.get("/memory/user-context", params={"user_id": "customer_123"})
    assert xml.json()["context"] == (
        '<human description="Information about the human user.">Premium subscriber. Joined '
        "2024.</human>"
    )
    summary = api.get("/memory/summary", params={"user_id": "customer_123"}).json()
    assert summary == {
        "success": True,
        "summary": '<summary description="A rolling summary of the conversation.">1 message. '
        "User: Hi, I need to return an item.</summary>",
    }
    raw = api.get("/memory/summary", params={"user_id": "customer_123", "format": "raw"})
    assert raw.json()["summary"] == "1 message. User: Hi, I need to return an item."
    bad = api.get("/memory/summary", params={"user_id": "customer_123", "format": "html"})
    seed_error(bad, 422, "validation_error")


def test_search_with_tags(api: TestClient) -> None:
    initialize(api)
    add(
        api,
        [
            said("user", "Hi, I need to return an item."),
            said("assistant", "I can help with that. What is the order number?"),
            said("user", "It's 12345-ABC."),
        ],
    )
    found = api.get(
        "/memory/search",
        params={"user_id": "customer_123", "query": "order number", "tags": "user"},
    ).json()
    assert found["results"][0] == "It's 12345-ABC." or "It's 12345-ABC." in found["results"]
    assert all(m["role"] == "user" for m in found["memories"])
    assert found["count"] == len(found["results"]) <= 5
    both = api.get(
        "/memory/search",
        params={"user_id": "customer_123", "query": "order number", "tags": "user,assistant"},
    ).json()
    assert both["results"][0] == "I can help with that. What is the order number?"
    assert both["total_found"] >= both["count"]
    one = api.get(
        "/memory/search",
        params={"user_id": "customer_123", "query": "order", "max_results": 1},
    ).json()
    assert one["count"] == 1


def test_context_options(api: TestClient) -> None:
    initialize(api, user_info="Name: Sarah")
    add(api, [said("user", f"Pizza fact number {i}") for i in range(6)])
    found = context(api, query="pizza")
    assert len(found["relevant_memories"]) == 3  # the seed's default
    assert len(context(api, query="pizza", max_results=5)["relevant_memories"]) == 5
    without = context(api, query="pizza", include_summary=False)
    assert without["summary"] == ""
    assert "<summary" not in without["combined_context"]
    assert context(api)["relevant_memories"] == []  # no query: blocks only

    # A token budget keeps the blocks, then the best memories that fit.
    full = context(api, query="pizza", max_results=5)
    assert full["truncated"] is False
    budget = full["estimated_tokens"] - 5
    trimmed = context(api, query="pizza", max_results=5, token_budget=budget)
    assert trimmed["truncated"] is True
    assert trimmed["estimated_tokens"] <= budget
    assert trimmed["relevant_memories"] == full["relevant_memories"][:4]
    assert len(trimmed["memories"]) == 4
    assert trimmed["combined_context"].startswith(full["combined_context"].split("<relevant")[0])
    tiny = context(api, query="pizza", token_budget=20)
    assert tiny["relevant_memories"] == []
    assert tiny["combined_context"].startswith("<human")  # the human block, 18 tokens


def test_agent_and_its_dashboard_url(tmp_path: Path, clock: FrozenClock, api: TestClient) -> None:
    agent_id = initialize(api)["agent_id"]
    found = api.get("/memory/agent/customer_123").json()
    assert found == {
        "success": True,
        "agent_id": agent_id,
        "dashboard_url": f"http://127.0.0.1/agents/{agent_id}",
    }
    settings = settings_for(tmp_path / "other", public_url="https://memory.example.com/")
    (tmp_path / "other").mkdir()
    with running(settings, clock) as other:
        agent_id = initialize(other)["agent_id"]
        url = other.get("/memory/agent/customer_123").json()["dashboard_url"]
        assert url == f"https://memory.example.com/agents/{agent_id}"


def test_errors_take_the_seeds_shape(api: TestClient) -> None:
    seed_error(api.get("/memory/context", params={"user_id": "nobody"}), 404, "subject_not_found")
    seed_error(api.get("/memory/agent/nobody"), 404, "subject_not_found")
    seed_error(api.delete("/memory/user/nobody"), 404, "subject_not_found")
    seed_error(
        api.post("/memory/add", json={"user_id": "nobody", "messages": [said("user", "hi")]}),
        404,
        "subject_not_found",
    )
    seed_error(api.get("/memory/runs/run_x_y"), 404, "memory_run_not_found")
    seed_error(api.get("/memory/runs/nonsense"), 404, "memory_run_not_found")
    initialize(api)
    for body in (
        {"user_id": "customer_123", "messages": []},
        {"user_id": "customer_123", "messages": [said("robot", "hi")]},
        {"user_id": "customer_123", "messages": [said("user", "  ")]},
        {"user_id": "customer_123", "messages": [said("user", "hi")] * 21},
        {"user_id": "customer_123", "messages": [said("user", "hi")], "extra": 1},
    ):
        seed_error(api.post("/memory/add", json=body), 422, "validation_error")
    seed_error(api.post("/memory/initialize", json={"user_id": ""}), 422, "validation_error")
    seed_error(
        api.post("/memory/initialize", json={"user_id": "x", "provider": "openai"}),
        400,
        "model_required",
    )
    seed_error(
        api.post(
            "/memory/initialize",
            json={"user_id": "x", "provider": "openai", "model": "gpt-4o-mini"},
        ),
        400,
        "provider_not_configured",
    )
    seed_error(
        api.get("/memory/search", params={"user_id": "customer_123"}), 422, "validation_error"
    )
    # Other routes keep our own shape.
    assert "success" not in api.get("/agents/nope").json()


def test_delete_answers_as_the_seed_says(api: TestClient) -> None:
    initialize(api)
    deleted = api.delete("/memory/user/customer_123")
    assert deleted.json() == {
        "success": True,
        "message": "Deleted all memory for user customer_123",
    }
    seed_error(
        api.get("/memory/context", params={"user_id": "customer_123"}), 404, "subject_not_found"
    )
    assert api.get("/agents").json() == []
