"""Long-term memory for OpenAI and Anthropic SDK calls, from an agent-memory server.

    from openai import OpenAI
    from client import learning

    client = OpenAI()
    with learning(agent="my_agent"):
        client.chat.completions.create(model="gpt-4o", messages=[...])

See README.md for every SDK path it covers and how capture failures are reported.
"""

from client.errors import MemoryServerError, MemoryServerUnavailable
from client.interceptor import Learning, learning

__all__ = ["Learning", "MemoryServerError", "MemoryServerUnavailable", "learning"]
