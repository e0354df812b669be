# /// script
# requires-python = ">=3.11"
# dependencies = ["httpx2>=2.16", "openai>=3.54"]
# ///
"""An agent with memory, through any OpenAI client: no API key at all.

It creates an agent on the offline demo model over the REST API, then talks to it with
the official `openai` SDK through the server's OpenAI-compatible endpoint (/v1): the agent
stores what you tell it in its memory and answers from it in a later call, in another
session. Start the server first, then run this script:

    ./dev serve
    uv run examples/openai_compatible.py

MEMORY_SERVER_URL points it at another server (default http://127.0.0.1:8283); against a
server in google mode, MEMORY_API_KEY is your API key (local mode needs none).
"""

import os

import httpx2
from openai import OpenAI

SERVER = os.environ.get("MEMORY_SERVER_URL", "http://127.0.0.1:8283").rstrip("/")
API_KEY = os.environ.get("MEMORY_API_KEY")  # none needed in local mode
AGENT = "openai-example"


def main() -> None:
    headers = {"Authorization": f"Bearer {API_KEY}"} if API_KEY else {}
    with httpx2.Client(base_url=SERVER, headers=headers, timeout=60) as rest:
        # An agent on the offline demo model: deterministic, no provider, no key. Creating
        # a name you already have returns that agent.
        created = rest.post(
            "/agents", json={"name": AGENT, "provider": "offline", "model": "offline-demo"}
        )
        created.raise_for_status()
        print(f"agent: {AGENT} ({created.json()['id']})")

        # The SDK insists on a key; local mode ignores whatever it sends.
        client = OpenAI(base_url=f"{SERVER}/v1", api_key=API_KEY or "no-key-needed")
        print("models:", ", ".join(model.id for model in client.models.list()))

        said = "My name is Alice and I live in Paris"
        answer = client.chat.completions.create(
            model=AGENT,  # the agent's name (or its id)
            messages=[{"role": "user", "content": said}],
            user="example-first-session",  # the session (conversation) of the agent
        )
        print(f"you: {said}")
        print(f"agent: {answer.choices[0].message.content}")

        # Another session, streamed: what the agent stored in its core memory is still there.
        asked = "Where do I live?"
        print(f"you: {asked}")
        print("agent (streamed): ", end="", flush=True)
        stream = client.chat.completions.create(
            model=AGENT,
            messages=[{"role": "user", "content": asked}],
            user="example-second-session",
            stream=True,
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                print(chunk.choices[0].delta.content, end="", flush=True)
        print()

        # The memory itself, over REST: the `human` block the agent wrote with its tools.
        human = rest.get(f"/memory-blocks/{AGENT}/human")
        human.raise_for_status()
        print("human block:", " | ".join(human.json()["value"].splitlines()))


if __name__ == "__main__":
    main()
