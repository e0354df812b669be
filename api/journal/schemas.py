from datetime import datetime

from api.journal.models import Run, RunState
from api.kit.model import ApiModel


class RunOut(ApiModel):
    run_id: str
    agent_id: str
    conversation_id: str
    state: RunState
    created_at: datetime
    ended_at: datetime | None

    @classmethod
    def of(cls, run: Run) -> "RunOut":
        return cls(
            run_id=run.run_id,
            agent_id=run.agent_id,
            conversation_id=run.conversation_id,
            state=run.state,
            created_at=run.created_at,
            ended_at=run.ended_at,
        )
