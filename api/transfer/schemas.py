from pydantic import Field

from api.kit.model import ApiModel


class SkippedOut(ApiModel):
    kind: str
    reason: str
    count: int
    examples: list[str] = Field(default_factory=list)


class ImportedAgent(ApiModel):
    agent_id: str
    agent_name: str
    created: bool = Field(description="False: the file was imported before; nothing changed")
    written: dict[str, int]
    skipped: list[SkippedOut]
    notes: list[str] = Field(description="What was changed to fit here (a name, a provider)")


class ImportOut(ApiModel):
    agents: list[ImportedAgent]
