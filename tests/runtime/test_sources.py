"""What a turn used (docs/sse.md, `context.used`): the archival memories and past messages
that entered its context, put in its prompt by a hook or handed to its model by a search
tool, with their ids and scores, and the blocks its prompt held. The event carries it, the
run's end stores it (in the closing transaction: no write of its own), `GET /runs/{id}`
returns it, and every message of the turn names its run."""

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.conversations.messages import service as message_service
from api.journal.models import Source
from api.journal.sources import MAX_SOURCES, PREVIEW_CHARS, UsedSources, preview
from api.kit.clock import FrozenClock
from api.runtime.hooks import AgentInitialized, HookProvider
from api.store.definition import load_definition
from api.store.rounds import WRITES, RoundCounter
from api.store.sqlite import SqliteTable
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.runtime.conftest import (
    Event,
    Store,
    events_of,
    messages,
    names,
    new_agent,
    new_conversation,
    running,
    send,
    use_openai,
)
from tests.runtime.test_categorized_memory import categorized_agent, tool
from tests.runtime.test_read_rounds import what

COFFEE = "Drinks dark roast coffee every morning"
ROME = "Flew to Rome in May for a conference"


class Recall(HookProvider):
    """A recall hook as seed 001's users write them: before the first LLM call it puts the
    memories it found in the prompt, and names them with their scores."""

    def __init__(self) -> None:
        self.found: list[dict[str, Any]] = []  # archival search hits, as REST answers them

    async def on_agent_initialized(self, event: AgentInitialized) -> None:
        if not self.found:
            return
        event.sections.append("Relevant memories:\n" + "\n".join(h["content"] for h in self.found))
        event.sources += [
            Source(
                kind="archival",
                id=hit["id"],
                via="test_recall",
                score=hit["score"],
                preview=hit["content"],
            )
            for hit in self.found
        ]


def remember(client: httpx2.Client, agent_id: str, content: str) -> str:
    inserted = client.post(f"/agents/{agent_id}/memory/archival", json={"content": content})
    assert inserted.status_code == 201, inserted.text
    memory_id: str = inserted.json()["id"]
    return memory_id


def search(client: httpx2.Client, agent_id: str, query: str) -> list[dict[str, Any]]:
    found = client.get(f"/agents/{agent_id}/memory/archival/search", params={"query": query})
    assert found.status_code == 200, found.text
    hits: list[dict[str, Any]] = found.json()["memories"]
    return hits


def used(found: list[Event]) -> dict[str, Any]:
    (event,) = [e for e in found if e.name == "context.used"]
    return {k: v for k, v in event.data.items() if k != "run_id"}


def blocks_of(client: httpx2.Client, agent_id: str) -> list[dict[str, Any]]:
    listed = client.get(f"/agents/{agent_id}/memory/blocks")
    assert listed.status_code == 200, listed.text
    return [{"label": b["name"], "version": b["version"]} for b in listed.json()]


def test_a_turn_records_the_recalled_and_searched_memories_and_the_recent_messages(
    settings: Settings, store: Store
) -> None:
    recall = Recall()
    with running(settings, store.clock, table=store.open(), hook_providers=[recall]) as client:
        agent_id = new_agent(client)  # the offline model: it searches for a topic
        coffee = remember(client, agent_id, COFFEE)
        rome = remember(client, agent_id, ROME)
        conversation_id = new_conversation(client, agent_id)

        first = send(client, conversation_id, "Hello")
        # Nothing recalled or searched yet: the blocks its prompt held, at their versions.
        assert used(first) == {"items": [], "blocks": blocks_of(client, agent_id), "left_out": 0}
        said = messages(client, conversation_id)

        store.clock.advance(1)
        (recalled,) = [h for h in search(client, agent_id, "Rome") if h["id"] == rome]
        recall.found = [recalled]
        coffee_score = next(
            h["score"] for h in search(client, agent_id, "coffee") if h["id"] == coffee
        )
        second = send(client, conversation_id, "What do you remember about coffee?")
        run_id = second[0].data["run_id"]

        assert names(second)[-3:] == ["context.used", "message", "run.completed"]
        (call,) = [e.data for e in second if e.name == "tool.call"]
        assert (call["name"], call["arguments"]) == ("archival_memory_search", {"query": "coffee"})
        assert COFFEE in second[-2].data["content"]
        record = used(second)
        items = record["items"]
        # The recent conversation (the continuity hook's), then the recall hook's memory,
        # then what the search gave the model: each once, with its id.
        assert [(i["kind"], i["id"], i["via"]) for i in items] == [
            ("message", said[0]["id"], "recent_conversation"),
            ("message", said[1]["id"], "recent_conversation"),
            ("archival", rome, "test_recall"),
            ("archival", coffee, "archival_memory_search"),
        ]
        assert [i["preview"] for i in items] == ["Hello", preview(said[1]["content"]), ROME, COFFEE]
        assert [i["conversation_id"] for i in items[:2]] == [conversation_id] * 2
        assert [i["score"] for i in items[:2]] == [None, None]  # they came by recency
        assert items[2]["score"] == pytest.approx(recalled["score"], rel=1e-5)
        assert items[3]["score"] == pytest.approx(coffee_score, rel=1e-5)
        assert record["blocks"] == blocks_of(client, agent_id)

        # The run keeps it, and a replay of its events says it again.
        run = client.get(f"/runs/{run_id}")
        assert run.status_code == 200, run.text
        assert run.json()["state"] == "completed"
        assert run.json()["sources"] == record
        replayed = events_of(client.get(f"/runs/{run_id}/events"))
        assert used(replayed) == record

        # Every message of a turn names its run.
        stored = messages(client, conversation_id)
        first_run = first[0].data["run_id"]
        assert [m["run_id"] for m in stored] == [first_run] * 2 + [run_id] * 4


def test_what_a_search_tool_found_is_kept_with_a_failed_run(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    agent_id = use_openai(client, fake_openai)
    coffee = remember(client, agent_id, COFFEE)
    conversation_id = new_conversation(client, agent_id)
    fake_openai.replies += [
        Reply(tool_calls=[ToolCallScript("archival_memory_search", '{"query": "coffee"}')]),
        *[Reply(status=500) for _ in range(3)],  # the SDK retries a 500 twice
    ]

    found = send(client, conversation_id, "What do I drink?")

    assert names(found)[-2:] == ["error", "run.failed"]
    assert "context.used" not in names(found)  # said of an answer; there is none
    run = client.get(f"/runs/{found[0].data['run_id']}").json()
    assert run["state"] == "failed"
    assert [(i["id"], i["via"]) for i in run["sources"]["items"]] == [
        (coffee, "archival_memory_search")
    ]


def test_seed_003s_tools_are_noted_and_its_prompt_holds_the_persona_alone(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    agent_id = categorized_agent(client, fake_openai, persona="You are terse.")
    conversation_id = new_conversation(client, agent_id)
    fact, other = [
        client.post(
            f"/agents/{agent_id}/memory/archival", json={"content": text, "category": "fact"}
        ).json()["id"]
        for text in (COFFEE, ROME)
    ]
    fake_openai.replies += [
        Reply(
            tool_calls=[
                tool("search_memories", query="coffee"),
                tool("list_memories", category="fact"),
            ]
        ),
        Reply(text="You drink coffee."),
    ]

    record = used(send(client, conversation_id, "What do I drink?"))

    items = record["items"]
    assert [(i["id"], i["via"]) for i in items] == [
        (fact, "search_memories"),
        (other, "list_memories"),  # the search's memory is listed once, as it came first
    ]
    assert items[0]["score"] is not None
    assert items[1]["score"] is None  # a listing has no score
    persona = next(b for b in blocks_of(client, agent_id) if b["label"] == "persona")
    assert record["blocks"] == [persona]


def test_a_turn_that_searches_writes_as_often_as_one_that_does_not(
    settings: Settings,
    clock: FrozenClock,
    fake_openai: FakeLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The answer waits for its vector long enough that it goes with its copy, however busy
    # the machine: the turns' writes are then the same every time.
    monkeypatch.setattr(message_service, "ANSWER_WAITS_FOR_VECTOR_SECONDS", 10.0)

    def writes(name: str, call: ToolCallScript) -> tuple[list[tuple[str, str]], dict[str, Any]]:
        counter = RoundCounter(
            SqliteTable(tmp_path / f"{name}.db", settings.dynamodb_table, load_definition())
        )
        with running(settings, clock, table=counter, hook_providers=[Recall()]) as client:
            agent_id = use_openai(client, fake_openai)
            remember(client, agent_id, COFFEE)
            conversation_id = new_conversation(client, agent_id)
            fake_openai.replies += [Reply(tool_calls=[call]), Reply(text="Coffee.")]
            mark = counter.mark()
            found = send(client, conversation_id, "What do I drink?")
            made = [what(c) for c in sorted(counter.since(mark), key=lambda c: c.start)]
            run = client.get(f"/runs/{found[0].data['run_id']}").json()
        return [w for w in made if w[0] in WRITES], run["sources"]

    searched, sources = writes(
        "search", ToolCallScript("archival_memory_search", '{"query": "coffee"}')
    )
    read, _ = writes("read", ToolCallScript("core_memory_read", '{"block": "human"}'))

    # The lease, the opening, the tool's call and its result as they happen, and the
    # closing, which carries what the turn used on the run's end.
    assert (
        searched
        == read
        == [
            ("put", "Lease"),
            ("transact_write", "MESSAGE"),
            ("put", "MESSAGE"),
            ("put", "MESSAGE"),
            ("transact_write", "MESSAGE"),
        ]
    )
    assert [i["via"] for i in sources["items"]] == ["archival_memory_search"]


def test_a_record_keeps_the_first_sources_each_once_and_counts_the_rest() -> None:
    used = UsedSources()
    many = [Source(kind="archival", id=f"m{i}", via="search") for i in range(MAX_SOURCES + 5)]
    used.add(many[:10])
    used.add(many[5:20])  # five seen already
    used.add([Source(kind="message", id="m1", via="recent_conversation")])  # another kind
    used.add(many[20:])

    record = used.record()

    ids = [s.id for s in many]
    assert [i.id for i in record.items] == [*ids[:20], "m1", *ids[20 : MAX_SOURCES - 1]]
    assert record.items[20].kind == "message"
    assert record.left_out == 6
    assert json.loads(record.model_dump_json())["left_out"] == 6


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("  two\nlines ", "two lines"),
        ("word " * 40, ("word " * 15).strip() + "…"),
        ("x" * 200, "x" * (PREVIEW_CHARS - 1) + "…"),
    ],
)
def test_a_preview_is_one_line_cut_at_a_word(text: str, shown: str) -> None:
    assert preview(text) == shown
    assert len(preview(text)) <= PREVIEW_CHARS
