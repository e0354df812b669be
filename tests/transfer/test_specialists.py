"""Export and import carry an agent's `handoff_to_user` and `specialists`: imported into
another user, an orchestrator asks the agents its specialists became there, whichever file
comes first; imported back into its own user, the agents it named."""

from pathlib import Path

from api.agents import service as agents
from api.agents.schemas import AgentCreate
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.transfer import ids
from api.transfer import service as transfer
from tests.transfer.conftest import ADA, BOB, export_bytes, records, write

ARCHITECTURES = ["krishna-memgpt"]


async def test_an_orchestrator_and_its_specialists_move_together(
    repos: Repositories, search: SearchEngine, clock: FrozenClock, tmp_path: Path
) -> None:
    billing, _ = await agents.create(
        repos, ADA, AgentCreate(name="Billing"), clock, architectures=ARCHITECTURES
    )
    desk, _ = await agents.create(
        repos,
        ADA,
        AgentCreate(name="Desk", specialists=[billing.agent_id], handoff_to_user=True),
        clock,
        architectures=ARCHITECTURES,
    )
    desk_file = await export_bytes(repos.table, desk, clock)
    (record,) = [r for r in records(desk_file) if r["type"] == "agent"]
    assert (record["specialists"], record["handoff_to_user"]) == ([billing.agent_id], True)
    billing_file = await export_bytes(repos.table, billing, clock)

    # The orchestrator first: it names the agent Billing becomes once imported.
    (report,) = await transfer.import_file(repos, search, BOB, write(tmp_path, desk_file))
    copy = await agents.get(repos, BOB, report.agent_id)
    assert copy.handoff_to_user is True
    assert copy.specialists == [ids.agent_id(BOB, billing.agent_id)]
    (later,) = await transfer.import_file(
        repos, search, BOB, write(tmp_path, billing_file, "billing.jsonl")
    )
    assert copy.specialists == [later.agent_id]

    # Back into its own user (a new copy, named apart): the agent it named there.
    (own,) = await transfer.import_file(
        repos, search, ADA, write(tmp_path, desk_file, "again.jsonl")
    )
    assert (await agents.get(repos, ADA, own.agent_id)).specialists == [billing.agent_id]
