"""DELETE /memory/user/{user_id}: afterwards no item of the table names the subject's agent,
on SQLite and on DynamoDB Local (a scan of the whole table), and other subjects keep
everything."""

import asyncio
from typing import Any

from api.kit.clock import FrozenClock
from api.store.table import Item
from tests.memory_layer.conftest import WORKFLOW_BLOCKS, WORKFLOW_MESSAGES, add, initialize, said
from tests.memory_layer.conftest import settings_for as _settings_for
from tests.runtime.conftest import Store, running, store

__all__ = ["store"]


def _names(value: Any, needle: str) -> bool:
    if isinstance(value, str):
        return needle in value
    if isinstance(value, dict):
        return any(_names(k, needle) or _names(v, needle) for k, v in value.items())
    if isinstance(value, list | set | tuple):
        return any(_names(v, needle) for v in value)
    return False


async def _scan(store: Store) -> list[Item]:
    table = store.open()
    try:
        page = await table.scan()
        assert page.cursor is None
        return page.items
    finally:
        await table.close()


def test_deleting_a_subject_leaves_no_item_naming_its_agent(
    store: Store, clock: FrozenClock, tmp_path: Any
) -> None:
    settings = _settings_for(tmp_path)
    with running(settings, clock, table=store.open()) as api:
        doomed = api.post("/memory/initialize-with-blocks", json=WORKFLOW_BLOCKS).json()
        add(api, WORKFLOW_MESSAGES, user_id="n8n_user_007")
        add(api, [said("user", "My name is Alex")], user_id="n8n_user_007")
        kept = initialize(api, "customer_123", user_info="Premium")
        add(api, [said("user", "It's 12345-ABC.")])
        last = add(
            api, [said("user", "One more")], user_id="n8n_user_007", wait_for_completion=False
        )
        assert last["status"] == "queued"
        deleted = api.delete("/memory/user/n8n_user_007")
        assert deleted.status_code == 200, deleted.text
        assert api.get("/memory/agent/n8n_user_007").status_code == 404
        assert api.get(f"/memory/runs/{last['run_id']}").status_code == 404
        found = api.get("/memory/search", params={"user_id": "customer_123", "query": "12345"})
        assert found.json()["results"] == ["It's 12345-ABC."]

    items = asyncio.run(_scan(store))
    assert items, "the other subject's items are there"
    naming = [item for item in items if _names(item, doomed["agent_id"])]
    assert naming == []
    assert not [i for i in items if _names(i, "n8n_user_007")]
    assert any(_names(item, kept["agent_id"]) for item in items)
