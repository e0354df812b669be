"""Ids of imported things, derived from the importing user and the source's ids: the same
file imported again by the same user names the same agent, conversations and runs, so it
overwrites nothing and adds nothing; another user's import makes ids of its own."""

import hashlib

_PURPOSE = "agent-memory-import"


def derived(email: str, source_agent_id: str, *parts: str) -> str:
    """A 32-hex-digit id, like the ids the service makes itself."""
    text = "\0".join((_PURPOSE, email, source_agent_id, *parts))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def agent_id(email: str, source_agent_id: str) -> str:
    return derived(email, source_agent_id, "agent")


def conversation_id(email: str, source_agent_id: str, source_conversation_id: str) -> str:
    return derived(email, source_agent_id, "conversation", source_conversation_id)


def run_id(new_agent_id: str, source_run_id: str) -> str:
    """Seed 004's run ids name their agent (`run_{agent_id}_{n}`): the same `n`, the new
    agent."""
    suffix = source_run_id.rsplit("_", 1)[-1]
    return f"run_{new_agent_id}_{suffix}"
