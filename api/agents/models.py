from datetime import datetime

from pydantic import Field

from api.kit.json_data import StoredJson
from api.store import keys
from api.store.entity import Entity
from api.store.table import Key

# The architecture an agent gets unless it asks for another (api/runtime/architectures).
DEFAULT_ARCHITECTURE = "krishna-memgpt"


class Agent(Entity):
    """Seed 000's Agent: pk `User#{created_by}`, sk `Agent#{agent_id}`."""

    ENTITY = keys.AGENT

    agent_id: str
    created_by: str
    agent_name: str
    agent_architecture: str = DEFAULT_ARCHITECTURE
    agent_provider: str = "offline"
    agent_model: str = "offline-demo"
    agent_persona: str = ""
    event_expiry_days: int = Field(default=7, ge=0)
    recent_turns: int = Field(default=10, ge=0)  # conversation turns loaded per turn
    # A new archival memory replaces the current one stating the same attribute of the same
    # subject with another value (api/search/facts.py); off: only when a writer says so.
    auto_supersede: bool = True
    # Offers its model `handoff_to_user`: a turn may end with a question for the person,
    # and its conversation then awaits their answer (api/runtime/handoff.py).
    handoff_to_user: bool = False
    # The agents it may ask, by id, all of the same owner (api/agents/specialists.py): each
    # is a tool of its turns, which runs that agent's own turn (api/runtime/specialists.py).
    specialists: list[str] = Field(default_factory=list)
    metadata: StoredJson = Field(default_factory=dict)  # free JSON (seed 002)
    created_at: datetime
    updated_at: datetime
    version: int = 0  # every save is conditioned on it: no edit overwrites another
    # When its last turn ended, or messages were last stored for it (None before): written
    # by the transaction that ends the turn or stores them, never by a save, which would
    # put back the time it read.
    last_used_at: datetime | None = None
    # How many documents it holds (api/documents/): moved by the transactions that make and
    # delete them, never by a save. A turn offers `retrieve` when it is above 0.
    documents: int = 0

    def key(self) -> Key:
        return keys.agent(self.created_by, self.agent_id)


class AgentNameGuard(Entity):
    """Makes an agent name unique per user; written in the same transaction as the agent."""

    ENTITY = keys.AGENT_NAME_GUARD

    created_by: str
    normalized_name: str
    agent_id: str

    def key(self) -> Key:
        return keys.agent_name_guard(self.created_by, self.normalized_name)
