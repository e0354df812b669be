from datetime import datetime

from pydantic import Field

from api.journal.models import Run, RunState, Sources
from api.kit.model import ApiModel


class RunOut(ApiModel):
    run_id: str
    agent_id: str
    conversation_id: str
    state: RunState
    created_at: datetime
    ended_at: datetime | None
    sources: Sources | None = Field(
        default=None,
        description="What the turn used: the archival memories and past messages that entered "
        "its context, with their ids and scores, and the core memory blocks its prompt held "
        "(as its `context.used` event said, docs/sse.md). Written when the run ends, for "
        "failed and interrupted runs too: none while it runs, nor for a run another process "
        "ended after its own died.",
    )

    @classmethod
    def of(cls, run: Run) -> "RunOut":
        return cls(
            run_id=run.run_id,
            agent_id=run.agent_id,
            conversation_id=run.conversation_id,
            state=run.state,
            created_at=run.created_at,
            ended_at=run.ended_at,
            sources=run.sources,
        )
