"""A conversation's last activity: a turn's end moves its `updated_at` and its place at the
top of its agent's conversations (listed with their session ids), in the transaction that
ends the turn; pages read meanwhile list no conversation twice. On a SQLite file and on
DynamoDB Local, through HTTP with the offline model."""

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest

from api.agents.models import Agent
from api.conversations.models import Conversation
from api.kit.clock import FrozenClock
from api.repositories import Repositories
from api.runtime.hooks import HookProvider, TurnFinished
from api.store import keys
from api.store.table import Item, Key, Table
from tests.runtime.conftest import Store, new_agent, running, send, store
from tests.runtime.conftest import settings as settings

__all__ = ["settings", "store"]

pytestmark = pytest.mark.dynamodb_local


def at(clock: FrozenClock) -> str:
    """The clock's now as the API writes a time."""
    return datetime.fromtimestamp(clock.now(), UTC).isoformat().replace("+00:00", "Z")


def conversation(client: httpx2.Client, agent_id: str, title: str) -> dict[str, Any]:
    made = client.post("/conversations", json={"agent_id": agent_id, "title": title})
    assert made.status_code == 201, made.text
    found: dict[str, Any] = made.json()
    return found


def listed(client: httpx2.Client, agent_id: str, **params: Any) -> dict[str, Any]:
    got = client.get("/conversations", params={"agent_id": agent_id, **params})
    assert got.status_code == 200, got.text
    page: dict[str, Any] = got.json()
    return page


def titles(page: dict[str, Any]) -> list[str]:
    return [c["title"] for c in page["conversations"]]


def test_a_turn_moves_its_conversation_to_the_top_and_its_updated_at(
    settings: Any, store: Store, clock: FrozenClock
) -> None:
    with running(settings, clock, store.open()) as client:
        agent_id = new_agent(client)
        older = conversation(client, agent_id, "older")
        clock.advance(1)
        newer = conversation(client, agent_id, "newer")
        assert titles(listed(client, agent_id)) == ["newer", "older"]
        assert older["updated_at"] == older["created_at"] == older["last_activity_at"]
        assert older["session_id"] == older["id"]  # opened by id: its own session

        clock.advance(60)
        ended = at(clock)
        send(client, older["id"], "Hello again")
        got = client.get(f"/conversations/{older['id']}").json()
        assert got["updated_at"] == got["last_activity_at"] == ended
        assert got["created_at"] == older["created_at"]
        page = listed(client, agent_id)
        assert titles(page) == ["older", "newer"]
        assert page["conversations"][0] == got  # listed as read, session id and all
        assert page["conversations"][1]["session_id"] == newer["id"]

        # A new title changes the conversation, not when it was last active: its place
        # in the list stays.
        clock.advance(60)
        renamed = client.patch(f"/conversations/{newer['id']}", json={"title": "renamed"})
        assert renamed.status_code == 200, renamed.text
        assert renamed.json()["updated_at"] == at(clock)
        assert renamed.json()["last_activity_at"] == newer["last_activity_at"]
        assert titles(listed(client, agent_id)) == ["older", "renamed"]

        # /chat's sessions are listed under the id the client gave them.
        chat = client.post(
            "/chat",
            json={"agent_id": agent_id, "session_id": "work", "prompt": "Hi", "stream": False},
        )
        assert chat.status_code == 200, chat.text
        top = listed(client, agent_id)["conversations"][0]
        assert top["session_id"] == "work"
        assert top["id"] == chat.json()["conversation_id"]


def test_pages_list_each_conversation_once_while_turns_move_them(
    settings: Any, store: Store, clock: FrozenClock
) -> None:
    with running(settings, clock, store.open()) as client:
        agent_id = new_agent(client)
        made = {}
        for title in ("c1", "c2", "c3", "c4", "c5"):
            made[title] = conversation(client, agent_id, title)["id"]
            clock.advance(1)
        first = listed(client, agent_id, limit=2)
        assert titles(first) == ["c5", "c4"]
        # Turns end in one conversation already listed and in one the next pages would
        # have listed: both go to the top, above where the cursor stands.
        clock.advance(1)
        send(client, made["c4"], "still here")
        clock.advance(1)
        send(client, made["c2"], "me too")
        second = listed(client, agent_id, limit=2, cursor=first["cursor"])
        assert titles(second) == ["c3", "c1"]
        assert second["cursor"] is None
        # Read again from the top, they lead, the latest first; every one once.
        assert titles(listed(client, agent_id)) == ["c2", "c4", "c5", "c3", "c1"]
        # A cursor still continues only its own query.
        other = new_agent(client, "Other")
        refused = client.get(
            "/conversations", params={"agent_id": other, "cursor": first["cursor"]}
        )
        assert refused.status_code == 400
        assert refused.json()["code"] == "invalid_cursor"


def test_messages_a_client_stores_are_activity_too(
    settings: Any, store: Store, clock: FrozenClock
) -> None:
    with running(settings, clock, store.open()) as client:
        agent_id = new_agent(client, "Scribe")

        def store_message(content: str) -> None:
            stored = client.post(
                "/messages", json={"agent_name": "Scribe", "role": "user", "content": content}
            )
            assert stored.status_code in (200, 201), stored.text

        store_message("first")  # opens the agent's default session
        clock.advance(5)
        conversation(client, agent_id, "opened later")
        clock.advance(5)
        store_message("second")
        page = listed(client, agent_id)["conversations"]
        assert [c["title"] for c in page][1] == "opened later"
        default = page[0]
        said = client.get(f"/conversations/{default['id']}/messages").json()["messages"]
        assert [m["content"] for m in said] == ["first", "second"]
        assert default["last_activity_at"] == default["updated_at"] == said[-1]["created_at"]
        agent = client.get(f"/agents/{agent_id}").json()
        assert agent["last_used_at"] == said[-1]["created_at"]


class DuringTheTurn(HookProvider):
    """Does `then` as the turn finishes, before the transaction that ends it."""

    def __init__(self) -> None:
        self.then: Any = None

    async def on_turn_finished(self, event: TurnFinished) -> None:
        if self.then is not None:
            await self.then(event)


def test_a_conversation_being_deleted_keeps_its_place_and_a_deleted_agent_stays_deleted(
    settings: Any, store: Store, clock: FrozenClock
) -> None:
    table: Table = store.open()
    repos = Repositories.over(table)
    during = DuringTheTurn()
    with running(settings, clock, table, hook_providers=[during]) as client:
        agent_id = new_agent(client)
        doomed = conversation(client, agent_id, "doomed")
        clock.advance(30)

        async def begin_deleting(event: TurnFinished) -> None:
            # As DELETE /conversations/{id} begins: the closing transaction is refused,
            # and its parts are written apart, each on its own condition.
            found = await repos.conversations.get(event.state.user_email, doomed["id"])
            assert found is not None
            await repos.conversations.mark_deleting(found)

        during.then = begin_deleting
        send(client, doomed["id"], "Hello")
        got = client.get(f"/conversations/{doomed['id']}").json()
        assert got["updated_at"] == got["last_activity_at"] == doomed["created_at"]
        # The agent was used all the same.
        assert client.get(f"/agents/{agent_id}").json()["last_used_at"] == at(clock)

        other = new_agent(client, "Gone")
        kept = conversation(client, other, "kept")
        clock.advance(30)

        async def delete_agent(event: TurnFinished) -> None:
            agent = await repos.agents.get(event.state.user_email, other)
            assert isinstance(agent, Agent)
            await table.delete(agent.key())

        during.then = delete_agent
        send(client, kept["id"], "Hello")
        assert client.get(f"/agents/{other}").status_code == 404
        # No agent made of its last use alone.
        assert asyncio.run(stored_item(store, keys.agent(me(client), other))) is None
        # The conversation's activity went on its own.
        assert client.get(f"/conversations/{kept['id']}").json()["last_activity_at"] == at(clock)


def me(client: httpx2.Client) -> str:
    email: str = client.get("/users/me").json()["email"]
    return email


async def stored_item(store: Store, key: Key) -> Item | None:
    table = store.open()
    try:
        return await table.get(key)
    finally:
        await table.close()


async def test_activity_is_written_for_an_open_conversation_only(
    table: Table, clock: FrozenClock
) -> None:
    repos = Repositories.over(table)
    made = datetime.fromtimestamp(clock.now(), UTC)
    later = datetime(2030, 1, 1, tzinfo=UTC)
    talk = Conversation(
        conversation_id="c1",
        created_by="u@example.com",
        agent_id="a1",
        created_at=made,
        updated_at=made,
        last_activity_at=made,
    )
    assert await repos.conversations.create(talk)
    assert await repos.conversations.mark_active("u@example.com", "a1", "c1", later)
    moved = await repos.conversations.get("u@example.com", "c1")
    assert moved is not None
    assert moved.last_activity_at == moved.updated_at == later
    # Being deleted, or deleted: nothing written, no conversation made of its activity.
    await repos.conversations.mark_deleting(moved)
    assert not await repos.conversations.mark_active("u@example.com", "a1", "c1", made)
    assert (await repos.conversations.get("u@example.com", "c1")) == moved
    await repos.conversations.delete(moved, [])
    assert not await repos.conversations.mark_active("u@example.com", "a1", "c1", later)
    assert await repos.conversations.get("u@example.com", "c1") is None
    page, _ = await repos.conversations.list_for_agent("a1", limit=10, cursor=None)
    assert page == []
