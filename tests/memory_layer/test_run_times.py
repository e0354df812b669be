"""A memory run's time is its place in its subject's queue: runs made by workers whose
clocks disagree still list in the order they run in."""

from datetime import UTC, datetime, timedelta

from api.agents.models import Agent
from api.conversations.messages.models import Message
from api.memory_runs.service import new_run
from api.store import keys

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def said(n: int, at: datetime) -> Message:
    return Message(
        conversation_id="c1", message_id=f"m{n}", role="user", content="hi", created_at=at
    )


def test_a_runs_time_is_its_queue_position_not_its_workers_clock() -> None:
    agent = Agent(
        agent_id="a1",
        created_by="ada@example.com",
        agent_name="Ada",
        created_at=NOW,
        updated_at=NOW,
    )
    first_at, second_at = NOW, NOW + timedelta(milliseconds=5)
    # The second run's worker reads its clock a second behind the first's.
    first, _ = new_run(agent, "u1", [said(1, first_at)], (NOW + timedelta(seconds=1)).timestamp())
    second, _ = new_run(agent, "u1", [said(2, second_at)], NOW.timestamp())

    assert (first.created_at, second.created_at) == (first_at, second_at)
    assert first.created_at < second.created_at
    assert first.queued_at == keys.time_of(first.created_at)
    assert second.queued_at == keys.time_of(second.created_at)
