"""What an export reads of the agent's partition before its archival memory."""

from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.store.rounds import RoundCounter
from tests.transfer.conftest import export_bytes, make_agent, records


async def test_the_blocks_and_their_warnings_are_one_query(
    repos_sqlite: Repositories, search_sqlite: SearchEngine, clock: FrozenClock
) -> None:
    made = await make_agent(repos_sqlite, search_sqlite, clock)
    counter = RoundCounter(repos_sqlite.table)
    data = await export_bytes(counter, made.agent, clock)
    kinds = [r["type"] for r in records(data)]
    assert {"block", "capacity_warning"} <= set(kinds)
    # Definitions, lines and warned turns lie side by side: one query reads them all.
    agent_key = f"Agent#{made.agent.agent_id}"
    core = [c for c in counter.calls if c.operation == "query" and c.target.startswith(agent_key)]
    assert [c.target.partition(" ")[2] for c in core][:2] == ["CapacityWarning#", "Archival#"]
