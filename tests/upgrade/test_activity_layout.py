"""Layout 2: a store of layout 1 (`fixtures/layout-1.db`, whose conversations and agents kept
no activity) upgraded at start-up lists its conversations by their last messages and its
agents by their last use, on SQLite and on DynamoDB Local; the step keeps what a turn wrote
meanwhile, and a second run changes nothing."""

import asyncio
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.agents.models import Agent
from api.conversations.messages.models import Message
from api.kit.clock import FrozenClock
from api.main import create_app
from api.maintenance import layout
from api.repositories import Repositories
from api.store import schema
from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable
from api.store.dynamodb_local import DynamoDBLocal
from api.store.table import Item, Table
from tests.upgrade.make_fixture import FIXTURE
from tests.upgrade.test_upgrade import LOCAL, settings_on, table_at

EMAIL = "local@localhost"  # the local user, who made the fixture
# After every message of the fixture (made on 2026-11-28 at 17:26:10): a user's message
# the first release stored in Ada's first conversation, the one a turn began.
LATER = datetime(2026, 11, 28, 17, 30, tzinfo=UTC)


async def ada(repos: Repositories) -> Agent:
    (found,) = [a for a in await repos.agents.list_for(EMAIL) if a.agent_name == "Ada"]
    return found


async def said_later_in_the_first_conversation(table: Table) -> str:
    """As the first release would have stored it: the message alone, the conversation
    untouched. The id of that conversation, Ada's oldest."""
    repos = Repositories.over(table)
    agent = await ada(repos)
    conversations, _ = await repos.conversations.list_for_agent(
        agent.agent_id, limit=10, cursor=None
    )
    oldest = min(conversations, key=lambda c: c.created_at)
    message = Message(
        conversation_id=oldest.conversation_id,
        message_id="later",
        role="user",
        content="Still there?",
        actor_id=EMAIL,
        created_at=LATER,
    )
    await table.put(message.to_dynamo_item())
    return oldest.conversation_id


async def last_message(repos: Repositories, conversation_id: str) -> datetime:
    newest, _ = await repos.messages.newest_first(conversation_id, limit=1, cursor=None)
    return newest[0].created_at


def test_an_upgraded_store_lists_conversations_and_agents_by_activity(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    shutil.copyfile(FIXTURE, path)

    async def prepare() -> str:
        table = table_at(path)
        try:
            return await said_later_in_the_first_conversation(table)
        finally:
            await table.close()

    oldest = asyncio.run(prepare())
    with TestClient(create_app(settings_on(path)), base_url=LOCAL) as client:
        agents = client.get("/agents").json()
        # Ada, used last (the message above), comes before the memory layer's agent, made
        # after her: by creation alone it would be the other way round.
        assert [a["name"] for a in agents] == ["Ada", "Memory: ada-1"]
        assert datetime.fromisoformat(agents[0]["last_used_at"]) == LATER
        listed = client.get("/conversations", params={"agent_id": agents[0]["id"]}).json()
        conversations = listed["conversations"]
        # Her first conversation, made before the other, is the latest active.
        assert conversations[0]["id"] == oldest
        assert len(conversations) == 2
        for c in conversations:
            said = client.get(f"/conversations/{c['id']}/messages", params={"order": "newest"})
            last = said.json()["messages"][0]["created_at"]
            assert c["last_activity_at"] == last
            assert c["updated_at"] == last  # none was renamed
            assert c["session_id"]
        got = client.get(f"/conversations/{oldest}").json()
        assert datetime.fromisoformat(got["last_activity_at"]) == LATER
        assert got["session_id"] == oldest  # opened by id: its session is its own id
    assert asyncio.run(version_of_store(path)) == schema.SCHEMA_VERSION


async def version_of_store(path: Path) -> int:
    table = table_at(path)
    try:
        return await schema.stored_version(table)
    finally:
        await table.close()


def test_the_step_keeps_what_a_turn_wrote_and_changes_nothing_the_second_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.db"
    shutil.copyfile(FIXTURE, path)
    turn_ended = datetime(2026, 11, 28, 18, 0, tzinfo=UTC)

    async def run() -> None:
        table = table_at(path)
        repos = Repositories.over(table)
        try:
            agent = await ada(repos)
            listed, _ = await repos.conversations.list_for_agent(
                agent.agent_id, limit=10, cursor=None
            )
            oldest = min(listed, key=lambda c: c.created_at)
            newest = max(listed, key=lambda c: c.created_at)
            # A replica of this release ended a turn in the older conversation before the
            # step reached it (both writes of its closing transaction, here apart).
            assert await repos.conversations.mark_active(
                EMAIL, agent.agent_id, oldest.conversation_id, turn_ended
            )
            assert await repos.agents.mark_used(EMAIL, agent.agent_id, turn_ended)
            await layout.record_activity(repos)
            after_first = await every_item(table)
            await layout.record_activity(repos)
            assert await every_item(table) == after_first

            kept = await repos.conversations.get(EMAIL, oldest.conversation_id)
            assert kept is not None
            assert kept.last_activity_at == turn_ended
            filled = await repos.conversations.get(EMAIL, newest.conversation_id)
            assert filled is not None
            assert filled.last_activity_at == await last_message(repos, newest.conversation_id)
            page, _ = await repos.conversations.list_for_agent(
                agent.agent_id, limit=10, cursor=None
            )
            assert [c.conversation_id for c in page] == [
                oldest.conversation_id,
                newest.conversation_id,
            ]
            assert (await ada(repos)).last_used_at == turn_ended
        finally:
            await table.close()

    asyncio.run(run())


async def every_item(table: Table) -> list[Item]:
    page = await table.scan()
    return sorted(page.items, key=lambda i: (i["pk"], i["sk"]))


@pytest.mark.dynamodb_local
async def test_a_dynamodb_table_of_layout_1_is_upgraded(
    dynamodb_local: DynamoDBLocal, clock: FrozenClock, tmp_path: Path
) -> None:
    # The fixture's items, every one, in a DynamoDB Local table: as the first release
    # would have left a table on AWS.
    path = tmp_path / "store.db"
    shutil.copyfile(FIXTURE, path)
    source = table_at(path)
    try:
        oldest = await said_later_in_the_first_conversation(source)
        items = (await source.scan()).items
    finally:
        await source.close()
    table = DynamoTable(
        f"upgrade-{uuid.uuid4().hex[:12]}", load_definition(), endpoint_url=dynamodb_local.endpoint
    )
    await table.create()
    try:
        await table.batch_write(puts=items)
        repos = Repositories.over(table)
        found = await schema.ensure_current(table, "test", layout.steps(repos))
        assert found == 0  # from before the version item
        agent = await ada(repos)
        assert agent.last_used_at == LATER
        page, _ = await repos.conversations.list_for_agent(agent.agent_id, limit=10, cursor=None)
        assert page[0].conversation_id == oldest
        for c in page:
            assert c.last_activity_at == await last_message(repos, c.conversation_id)
        assert await schema.stored_version(table) == schema.SCHEMA_VERSION
    finally:
        await table.close()
