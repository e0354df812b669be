"""`agent-memory reembed`: every searchable item gets the configured model's vector, messages
stored before they were searchable become so, running servers see it, and a second run
has nothing left to do."""

from datetime import UTC, datetime
from pathlib import Path

from api.agents import service as agents
from api.agents.schemas import AgentCreate
from api.conversations import service as conversations
from api.conversations.messages import service as messages
from api.conversations.messages.models import Message
from api.embeddings.base import Embedder
from api.kit.clock import FrozenClock
from api.maintenance import reembed
from api.memory import archival
from api.repositories import Repositories
from api.runtime.architectures.registry import ARCHITECTURES
from api.search import vectors
from api.search.engine import SearchEngine
from api.store import keys
from api.store.table import Key, Table
from tests.app.test_cli import run_cli

EMAIL = "ada@example.com"


class Counted:
    def __init__(self) -> None:
        self.found_total = 0
        self.done_total = 0

    def found(self, count: int) -> None:
        self.found_total += count

    def done(self, count: int) -> None:
        self.done_total += count


async def legacy_agent(store: Table, clock: FrozenClock) -> tuple[str, str]:
    """An agent whose memories were stored without vectors and whose messages were stored
    before messages were searchable."""
    repos = Repositories.over(store)
    agent, _ = await agents.create(
        repos, EMAIL, AgentCreate(name="Legacy"), clock, architectures=ARCHITECTURES
    )
    lexical = SearchEngine(repos.search, None, clock)
    for text in ["I love pizza", "My bike is red", "The dentist is on Thursday"]:
        await archival.insert(repos, lexical, agent.agent_id, text)
    conversation = await conversations.create(repos, agent, "old chat", clock)
    for i, (role, text) in enumerate(
        [("user", "We adopted a puppy called Biscuit"), ("assistant", "Lovely name!")]
    ):
        await repos.messages.add(
            Message(
                conversation_id=conversation.conversation_id,
                message_id=f"m{i}",
                role=role,
                content=text,
                created_at=datetime(2025, 1, 1, 12, 0, i, tzinfo=UTC),
            ),
        )
    return agent.agent_id, conversation.conversation_id


async def test_reembed_gives_every_item_the_model_and_serving_engines_see_it(
    repos: Repositories, store: Table, static: Embedder, clock: FrozenClock
) -> None:
    agent_id, _ = await legacy_agent(store, clock)
    serving = SearchEngine(repos.search, static, clock)
    before = await archival.search(serving, agent_id, "what food do I like?", mode="semantic")
    assert before.total == 0  # no vector of its model yet
    assert (await messages.search(repos, serving, EMAIL, agent_id, "Biscuit")).total == 0

    progress = Counted()
    tally = await reembed.reembed(repos, SearchEngine(repos.search, static, clock), progress)
    assert (tally.agents, tally.embedded, tally.copied, tally.skipped) == (1, 3, 2, 0)
    assert progress.found_total == progress.done_total == 5

    after = await archival.search(serving, agent_id, "what food do I like?", mode="semantic")
    assert after.memories[0].content == "I love pizza"
    found = await messages.search(repos, serving, EMAIL, agent_id, "Biscuit", mode="lexical")
    # The reply comes with it, as its context, not as a match of its own.
    assert [h.message_id for h in found.hits] == ["m0"]
    assert found.hits[0].after is not None
    assert found.hits[0].after.content == "Lovely name!"
    pk, sk = keys.archival_of(agent_id)
    stored = await store.query(pk, sk=sk)
    assert {i[vectors.EMBEDDING_MODEL] for i in stored.items} == {static.model_id}

    again = await reembed.reembed(repos, SearchEngine(repos.search, static, clock), Counted())
    assert (again.embedded, again.copied) == (0, 0)


async def test_what_was_deleted_meanwhile_is_skipped_not_revived(
    repos: Repositories, store: Table, static: Embedder, clock: FrozenClock
) -> None:
    agent_id, _ = await legacy_agent(store, clock)
    engine = SearchEngine(repos.search, static, clock)
    work = await reembed._work_of(repos, engine, EMAIL, agent_id)
    doomed = next(w for w in work if w.item is not None and w.text == "My bike is red")
    memory = await archival.search(engine, agent_id, "bike", mode="lexical")
    await archival.delete_memory(repos, engine, agent_id, memory.memories[0].memory_id)
    tally = reembed.Tally()
    await reembed._commit(engine, EMAIL, agent_id, work, tally)
    assert (tally.embedded, tally.copied, tally.skipped) == (2, 2, 1)
    assert doomed.item is not None
    assert await store.get(Key(doomed.item["pk"], doomed.item["sk"])) is None
    assert (await archival.search(engine, agent_id, "bike", mode="lexical")).total == 0


async def test_the_command_runs_with_a_progress_bar(tmp_path: Path, clock: FrozenClock) -> None:
    from api.store.definition import load_definition
    from api.store.sqlite import SqliteTable

    path = tmp_path / "cli.db"
    table = SqliteTable(path, "agent-memory", load_definition(), clock=clock)
    await table.create()
    agent_id, _ = await legacy_agent(table, clock)
    await table.close()
    env = {"STORE": "sqlite", "SQLITE_PATH": str(path)}

    done = run_cli("reembed", env=env)
    assert done.returncode == 0, done.stderr
    assert "1 agent(s): 3 item(s) embedded, 2 message(s) made searchable" in done.stdout
    assert "re-embedding" in done.stderr  # the bar
    rerun = run_cli("reembed", "--agent", agent_id, env=env)
    assert "0 item(s) embedded, 0 message(s)" in rerun.stdout

    refused = run_cli("reembed", env={**env, "MEMORY_EMBEDDING_BACKEND": "none"})
    assert refused.returncode == 2
    assert "MEMORY_EMBEDDING_BACKEND=none" in refused.stderr
