"""Issue 29's demonstration through POST /chat with the offline model: a person corrects
themselves ("Actually, call me Bob", "I moved to Porto"), the agent answers with the fact
as it is now, the block holds it once, and the block's history shows what it replaced."""

from typing import Any

import httpx2
import pytest

from api.config import Settings
from api.kit.clock import FrozenClock
from api.llm.offline import DISCLAIMER
from tests.runtime.conftest import Store, lines_of, new_agent, running
from tests.runtime.test_chat import said


def history(client: httpx2.Client, agent_id: str, block: str = "human") -> list[dict[str, Any]]:
    got = client.get(f"/agents/{agent_id}/memory/blocks/{block}/history")
    assert got.status_code == 200, got.text
    changes: list[dict[str, Any]] = got.json()["changes"]
    return changes


def test_actually_call_me_bob(settings: Settings, store: Store, clock: FrozenClock) -> None:
    with running(settings, clock, store.open()) as client:
        agent_id = new_agent(client)
        session = {"session_id": "s-1"}
        said(client, clock, agent_id, "My name is Alice Moreira", **session)
        assert lines_of(client, agent_id) == ["Name: Alice Moreira"]
        corrected = said(client, clock, agent_id, "Actually, call me Bob", **session)
        assert corrected == f"Got it, Bob! I've updated my memory. {DISCLAIMER}"
        assert said(client, clock, agent_id, "What is my name?", **session) == (
            f"Your name is Bob. {DISCLAIMER}"
        )
        assert lines_of(client, agent_id) == ["Name: Bob"]
        latest, first = history(client, agent_id)
        assert (latest["source"], latest["action"], latest["line_number"]) == (
            "tool",
            "replace",
            1,
        )
        assert (latest["old_line"], latest["new_line"]) == ("Name: Alice Moreira", "Name: Bob")
        assert (first["action"], first["new_line"]) == ("append", "Name: Alice Moreira")
        # Another session knows the name as it is now.
        assert said(client, clock, agent_id, "Who am I?", session_id="s-2").startswith(
            "Your name is Bob."
        )


@pytest.mark.parametrize("move", ["I moved to Porto", "I live in Porto now, not Lisbon any more"])
def test_i_moved_to_porto(client: httpx2.Client, clock: FrozenClock, move: str) -> None:
    agent_id = new_agent(client)
    said(client, clock, agent_id, "My name is Ana and I live in Lisbon")
    said(client, clock, agent_id, move)
    assert said(client, clock, agent_id, "Where do I live?") == f"You live in Porto. {DISCLAIMER}"
    assert lines_of(client, agent_id) == ["Name: Ana", "Lives in: Porto"]
    [latest, *_] = history(client, agent_id)
    assert (latest["old_line"], latest["new_line"]) == ("Lives in: Lisbon", "Lives in: Porto")


def test_what_is_no_longer_true_is_deleted(client: httpx2.Client, clock: FrozenClock) -> None:
    agent_id = new_agent(client)
    said(client, clock, agent_id, "I work at Acme and I like tea")
    said(client, clock, agent_id, "I don't work at Acme any more")
    assert lines_of(client, agent_id) == ["Likes: tea"]
    assert said(client, clock, agent_id, "Where do I work?").startswith("I don't know that yet.")
    [latest, *_] = history(client, agent_id)
    assert (latest["action"], latest["old_line"], latest["line_number"]) == (
        "delete",
        "Works at: Acme",
        1,
    )
    # Likes add up.
    said(client, clock, agent_id, "I like coffee")
    assert lines_of(client, agent_id) == ["Likes: tea", "Likes: coffee"]
