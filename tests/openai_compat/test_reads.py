"""A completion reads the agent once: found by name, then handed to the /chat turn."""

from pathlib import Path

from api.config import Settings
from api.kit.clock import FrozenClock
from api.store.definition import load_definition
from api.store.rounds import RoundCounter
from api.store.sqlite import SqliteTable
from tests.runtime.conftest import running


def test_a_completion_reads_its_agent_once(
    settings: Settings, clock: FrozenClock, tmp_path: Path
) -> None:
    counter = RoundCounter(
        SqliteTable(tmp_path / "reads.db", settings.dynamodb_table, load_definition(), clock=clock)
    )
    with running(settings, clock, table=counter) as client:
        created = client.post("/agents", json={"name": "Reader"})
        agent_id = created.json()["id"]
        body = {"model": "Reader", "messages": [{"role": "user", "content": "Hi"}]}
        assert client.post("/v1/chat/completions", json=body).status_code == 200  # warm-up
        mark = counter.mark()
        answered = client.post("/v1/chat/completions", json=body)
        calls = counter.since(mark)
    assert answered.status_code == 200, answered.text
    agent_reads = [c for c in calls if c.operation == "get" and f"Agent#{agent_id}" in c.target]
    assert len(agent_reads) == 1
