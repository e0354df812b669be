"""Seed 001's state: who is speaking, in which session. The runtime makes it; every
architecture and every hook receives it and none of them creates it."""

from dataclasses import dataclass


@dataclass(frozen=True)
class TurnState:
    user_email: str  # the tenant, from authentication only
    agent_id: str
    conversation_id: str  # what the session id resolved to, inside the tenant
    actor_id: str  # who is speaking; the user unless the client says otherwise
    session_id: str  # the client's name for the conversation
    run_id: str

    def get(self, name: str, default: str | None = None) -> str | None:
        """Seed 001 reads state like a dict: `state.get("actor_id")`."""
        value = getattr(self, name, default)
        return value if isinstance(value, str) else default
