# /// script
# requires-python = ">=3.11"
# dependencies = ["agent-memory-client[openai]", "openai>=3.54"]
#
# [tool.uv.sources]
# agent-memory-client = { path = "../client" }
# ///
"""learning(): your own OpenAI calls, with memory (seed 002's "Basic Client Usage").

Inside a `learning()` block, each chat completion gets what the memory server knows that
is relevant to the question, and the exchange is stored. Here the first block tells the
model a name and a preferred language; the second, a new block as in a later session,
asks about them, and the model's request carries both. Start the server, then run it with
your key:

    ./dev serve
    OPENAI_API_KEY=sk-... uv run examples/learning_openai.py

OPENAI_MODEL chooses the model (default gpt-4o-mini); OPENAI_BASE_URL, any OpenAI-
compatible provider. MEMORY_SERVER_URL points the client at another memory server
(default http://127.0.0.1:8283); against a server in google mode, MEMORY_API_KEY is your
API key. With no key at all, see openai_compatible.py.
"""

import logging
import os

from openai import OpenAI

from client import learning

MODEL = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
AGENT = "learning-example"


def ask(client: OpenAI, question: str) -> None:
    answer = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": question}]
    )
    print(f"you: {question}")
    print(f"model: {answer.choices[0].message.content}")


def main() -> None:
    logging.basicConfig(level=logging.WARNING)  # the client warns if memory fails mid-block
    client = OpenAI()  # OPENAI_API_KEY and OPENAI_BASE_URL from the environment

    with learning(agent=AGENT) as memory:  # the server URL and key from the environment
        ask(client, "My name is Alice and I prefer Python.")
    # The exit stored the exchange (it waits for what is still on its way).
    print(f"stored: {memory.stored} messages, {memory.capture_failures} failed")

    # Later, in a new block: the memory server remembers, and the model is told.
    with learning(agent=AGENT):
        ask(client, "What is my name, and which programming language should I use?")


if __name__ == "__main__":
    main()
