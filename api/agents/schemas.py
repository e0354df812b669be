from datetime import datetime
from typing import Annotated, Any

from pydantic import ConfigDict, Field, JsonValue

from api.agents.models import DEFAULT_ARCHITECTURE, Agent
from api.agents.specialists import MAX_SPECIALISTS
from api.kit.forms import FormField
from api.kit.json_data import Metadata
from api.kit.model import ApiModel
from api.kit.text import PlainName

MAX_RECENT_TURNS = 100
AgentIds = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=64)]],
    Field(max_length=MAX_SPECIALISTS),
]


class AgentCreate(ApiModel):
    """What a person fills in to create an agent; it also defines the agents form."""

    model_config = ConfigDict(extra="forbid")

    name: PlainName = Field(min_length=1, max_length=100, title="Name")
    architecture: str = Field(default=DEFAULT_ARCHITECTURE, title="Architecture")
    provider: str = Field(default="offline", title="LLM provider")
    model: str = Field(default="offline-demo", min_length=1, max_length=200, title="Model")
    persona: str = Field(
        default="",
        max_length=5000,
        title="Persona",
        description="Who the agent is; it starts its persona memory block.",
        json_schema_extra={"format": "multiline"},
    )
    event_expiry_days: int = Field(
        default=7,
        strict=True,  # `false` is not 0 days
        ge=0,
        le=3650,
        title="Keep conversation events (days)",
        description="0 keeps them forever.",
    )
    recent_turns: int = Field(
        default=10,
        strict=True,
        ge=0,
        le=MAX_RECENT_TURNS,
        title="Recent turns in context",
        description="How many of the latest turns of a session the agent sees; 0 for none.",
    )
    auto_supersede: bool = Field(
        default=True,
        strict=True,
        title="Replace changed facts",
        description='A new memory stating another value of the same fact ("Lives in: Porto" '
        'after "Lives in: Lisbon") replaces the old one, which is kept as history.',
    )
    handoff_to_user: bool = Field(
        default=False,
        strict=True,
        title="May hand the turn back to you",
        description="Offers the tool handoff_to_user: the agent may end its turn with a "
        "question for you, and the conversation waits for your answer.",
    )
    specialists: AgentIds = Field(
        default_factory=list,
        title="Specialists",
        description="Other agents of yours it may ask: each becomes a tool (ask_<name>) that "
        "runs that agent's own turn, with its own memory, and answers with its reply.",
    )
    metadata: Metadata = Field(
        default_factory=dict,
        title="Metadata",
        description="Free JSON: an object of your own (null or left out: empty).",
    )


def _without_null(schema: dict[str, Any]) -> None:
    """A field left out is unchanged and null is refused (400: a field is changed, never
    emptied): the document offers no null."""
    for field in schema["properties"].values():
        if field.get("default", "") is None:
            del field["default"]
        options = [o for o in field.pop("anyOf", []) if o != {"type": "null"}]
        if len(options) == 1:
            field.update(options[0])
        elif options:
            field["anyOf"] = options


class AgentUpdate(ApiModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_without_null)

    name: PlainName | None = Field(default=None, min_length=1, max_length=100)
    architecture: str | None = None
    provider: str | None = None
    model: str | None = Field(default=None, min_length=1, max_length=200)
    persona: str | None = Field(default=None, max_length=5000)
    event_expiry_days: int | None = Field(default=None, strict=True, ge=0, le=3650)
    recent_turns: int | None = Field(default=None, strict=True, ge=0, le=MAX_RECENT_TURNS)
    auto_supersede: bool | None = Field(default=None, strict=True)
    handoff_to_user: bool | None = Field(default=None, strict=True)
    specialists: AgentIds | None = None
    metadata: Metadata | None = None


class AgentOut(ApiModel):
    id: str
    name: str
    architecture: str
    provider: str
    model: str
    persona: str
    event_expiry_days: int
    recent_turns: int
    auto_supersede: bool
    handoff_to_user: bool = Field(
        description="Whether its model is offered handoff_to_user (a turn ending with a "
        "question for the person)"
    )
    specialists: list[str] = Field(
        description="The ids of the agents it may ask (docs/agents-together.md)"
    )
    metadata: dict[str, JsonValue]
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None = Field(
        description="When its last turn ended (or messages were last stored for it, POST "
        "/messages, /memory/add); null before. GET /agents lists the last used first (one "
        "never used counts from its creation), then by name"
    )

    @classmethod
    def of(cls, agent: Agent) -> "AgentOut":
        return cls(
            id=agent.agent_id,
            name=agent.agent_name,
            architecture=agent.agent_architecture,
            provider=agent.agent_provider,
            model=agent.agent_model,
            persona=agent.agent_persona,
            event_expiry_days=agent.event_expiry_days,
            recent_turns=agent.recent_turns,
            auto_supersede=agent.auto_supersede,
            handoff_to_user=agent.handoff_to_user,
            specialists=agent.specialists,
            metadata=agent.metadata,
            created_at=agent.created_at,
            updated_at=agent.updated_at,
            last_used_at=agent.last_used_at,
        )


class AgentForm(ApiModel):
    fields: list[FormField]
    models: dict[str, list[str]] = Field(
        description="The models of each provider offered in the provider field"
    )
    notes: dict[str, str] = Field(
        default_factory=dict, description="Providers whose models could not be listed, and why"
    )


class ProviderModels(ApiModel):
    provider: str
    models: list[str] = Field(default_factory=list, description="The models it lists")
    note: str | None = Field(
        default=None, description="Why its models could not be listed (then none are)"
    )
