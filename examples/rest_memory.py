# /// script
# requires-python = ">=3.11"
# dependencies = ["httpx2>=2.16"]
# ///
"""Seed 002's REST API: an agent's messages, semantic search over them, memory blocks, and
the context a prompt needs, with nothing but HTTP.

    ./dev serve
    uv run examples/rest_memory.py

MEMORY_SERVER_URL points it at another server (default http://127.0.0.1:8283); against a
server in google mode, MEMORY_API_KEY is your API key (local mode needs none).
"""

import os
from typing import Any

import httpx2

SERVER = os.environ.get("MEMORY_SERVER_URL", "http://127.0.0.1:8283").rstrip("/")
API_KEY = os.environ.get("MEMORY_API_KEY")
AGENT = "rest-example"

CONVERSATION = [
    ("user", "I'm planning a trip to Japan in April to see the cherry blossoms."),
    ("assistant", "April is a great time for cherry blossoms in Kyoto and Tokyo."),
    ("user", "I drink green tea every morning, never coffee."),
    ("assistant", "Noted: green tea in the morning."),
    ("user", "My sister Maya is a violinist in Berlin."),
]


def ok(response: httpx2.Response) -> Any:
    """The answer's JSON, or the server's error ({code, message}) as an exception."""
    if response.is_error:
        raise SystemExit(f"{response.request.method} {response.request.url}: {response.text}")
    return response.json()


def main() -> None:
    headers = {"Authorization": f"Bearer {API_KEY}"} if API_KEY else {}
    with httpx2.Client(base_url=SERVER, headers=headers, timeout=60) as http:
        health = ok(http.get("/health"))
        print(f"server: {health['status']}, embeddings: {health['embedding_backend']}")

        # An agent is a namespace of memory, created by name (again: the same agent).
        agent = ok(http.post("/agents", json={"name": AGENT, "metadata": {"example": True}}))
        print(f"agent: {agent['name']} ({agent['id']})")

        # Messages are stored with their embeddings, in the agent's default session.
        for role, content in CONVERSATION:
            body = {"agent_name": AGENT, "role": role, "content": content}
            ok(http.post("/messages", json=body))
        latest = ok(http.get(f"/messages/{AGENT}", params={"limit": 2}))
        print("latest messages:")
        for message in latest:
            print(f"  {message['role']}: {message['content']}")

        # Search by meaning: best first, each with its cosine similarity to the query.
        query = "What does the user like to drink?"
        found = ok(http.post("/messages/search", json={"agent_name": AGENT, "query": query}))
        print(f"search {query!r}:")
        for hit in found[:3]:
            similarity = hit["similarity"]
            score = "n/a" if similarity is None else f"{similarity:.2f}"
            print(f"  [{score}] {hit['content']}")

        # Memory blocks: always in the agent's context. `human` exists (empty) for every
        # agent; replacing its value is a PUT. A new label is a POST (409 when it exists).
        human = {"value": "Name: Sam\nDrinks: green tea, never coffee"}
        ok(http.put(f"/memory-blocks/{AGENT}/human", json=human))
        trip = {"agent_name": AGENT, "label": "trip", "value": "Japan in April"}
        created = http.post("/memory-blocks", json=trip)
        if created.status_code == 409:  # run before: the block is there, update it
            ok(http.put(f"/memory-blocks/{AGENT}/trip", json={"value": trip["value"]}))
        else:
            ok(created)
        print("blocks:")
        for block in ok(http.get(f"/memory-blocks/{AGENT}")):
            if block["value"]:
                print(f"  {block['label']}: {' | '.join(block['value'].splitlines())}")

        # Context: what a prompt needs, blocks and relevant messages, in one call.
        question = "What does my sister do?"
        context = ok(http.post(f"/context/{AGENT}", json={"query": question}))
        print(f"context for {question!r}:")
        for block in context["memory_blocks"]:
            print(f"  block {block['label']}: {' | '.join(block['value'].splitlines())}")
        for message in context["relevant_messages"][:2]:
            print(f"  message: {message['content']}")


if __name__ == "__main__":
    main()
