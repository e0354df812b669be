"""The store calls a turn makes after its LLM call: the memory upkeep reuses the blocks the
turn read at its start unless one of its tools may have changed them, and the answer is
written with its searchable copy, one transaction."""

import asyncio
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from api.config import Settings
from api.conversations.messages import service as message_service
from api.conversations.messages.models import Message
from api.kit.clock import FrozenClock
from api.search.engine import SearchEngine
from api.store.definition import load_definition
from api.store.rounds import WRITES, Call, RoundCounter
from api.store.sqlite import SqliteTable
from api.store.table import SK, Item, Page, Put, SkCondition, Table, TxOp
from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.runtime.conftest import new_conversation, running, send, use_openai
from tests.runtime.test_read_rounds import what


def turn_calls(
    settings: Settings,
    clock: FrozenClock,
    fake: FakeLLM,
    tmp_path: Path,
    replies: list[Reply],
    notes: str = "one two three four five six seven",  # 7 words of 10: not yet warned
) -> tuple[list[Call], list[tuple[str, str]], list[str], list[dict[str, object]], list[list[str]]]:
    """One warm-up turn, then one with `replies`: its store calls in the order they
    started, its reads of core memory, its events' names, its memory warnings and what
    each of its transactions wrote."""
    counter = QueryCounter(
        SqliteTable(tmp_path / "turns.db", settings.dynamodb_table, load_definition(), clock=clock)
    )
    with running(settings, clock, table=counter) as client:
        agent_id = use_openai(client, fake)
        created = client.post(
            f"/agents/{agent_id}/memory/blocks",
            json={"name": "notes", "word_limit": 10, "content": notes},
        )
        assert created.status_code == 201, created.text
        conversation_id = new_conversation(client, agent_id)
        send(client, conversation_id, "Hello")
        clock.advance(1)
        fake.replies.extend(replies)
        mark, queried = counter.mark(), len(counter.queries)
        transacted = len(counter.transactions)
        found = send(client, conversation_id, "Hello again")
        calls = sorted(counter.since(mark), key=lambda c: c.start)
    assert [e.name for e in found][-1] == "run.completed"
    warnings = [e.data for e in found if e.name == "memory.warning"]
    memory_reads = [q for q in counter.queries[queried:] if q in (BLOCKS, COUNTS)]
    transactions = counter.transactions[transacted:]
    return calls, memory_reads, [e.name for e in found], warnings, transactions


class QueryCounter(RoundCounter):
    """Notes, besides the calls, each query's sort-key condition and the kinds of item each
    transaction writes."""

    def __init__(self, table: Table) -> None:
        super().__init__(table)
        self.queries: list[tuple[str, str]] = []
        self.transactions: list[list[str]] = []

    async def transact_write(self, ops: Sequence[TxOp]) -> None:
        self.transactions.append(sorted(kind(op) for op in ops))
        await super().transact_write(ops)

    async def query(
        self,
        pk: str,
        *,
        sk: SkCondition | None = None,
        index: str | None = None,
        forward: bool = True,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page:
        self.queries.append((sk.op, sk.value) if sk else ("all", ""))
        return await super().query(
            pk, sk=sk, index=index, forward=forward, limit=limit, cursor=cursor
        )


def kind(op: TxOp) -> str:
    """`Put Run`: the operation and its item's sort-key prefix."""
    sort_key = op.item[SK] if isinstance(op, Put) else op.key.sk
    return f"{type(op).__name__} {sort_key.partition('#')[0]}"


BLOCKS = ("between", "CapacityWarning#")  # the blocks, their lines and warning counts
COUNTS = ("begins_with", "CapacityWarning#")  # the warning counts alone


def append_to_notes(words: str) -> Reply:
    arguments = json.dumps({"block": "notes", "content": words})
    return Reply(tool_calls=[ToolCallScript("core_memory_append", arguments)])


def test_a_turn_without_tools_counts_warnings_on_the_blocks_it_read(
    settings: Settings, clock: FrozenClock, fake_openai: FakeLLM, tmp_path: Path
) -> None:
    _, memory_reads, _, warnings, _ = turn_calls(
        settings, clock, fake_openai, tmp_path, [Reply(text="Hi")], notes="a b c d e f g h i"
    )
    # The blocks and their warning counts are read once, at the start; the upkeep reads
    # nothing more...
    assert memory_reads == [BLOCKS]
    # ...and counts this turn as the second warned one (the first was the warm-up).
    assert [(w["block"], w["warned_turns"]) for w in warnings] == [("notes", 2)]


def test_a_turn_whose_tool_wrote_core_memory_reads_the_blocks_again(
    settings: Settings, clock: FrozenClock, fake_openai: FakeLLM, tmp_path: Path
) -> None:
    # 7 words when the turn starts; the tool's line takes the block to 9 of 10.
    _, memory_reads, _, warnings, _ = turn_calls(
        settings, clock, fake_openai, tmp_path, [append_to_notes("eight nine"), Reply(text="ok")]
    )
    assert memory_reads == [BLOCKS, BLOCKS]  # at the start, and after the tool wrote
    assert [(w["block"], w["percent_used"], w["warned_turns"]) for w in warnings] == [
        ("notes", 90, 1)
    ]


def test_a_tool_that_only_reads_core_memory_does_not_make_the_upkeep_read_again(
    settings: Settings, clock: FrozenClock, fake_openai: FakeLLM, tmp_path: Path
) -> None:
    read = Reply(tool_calls=[ToolCallScript("core_memory_read", json.dumps({"block": "notes"}))])
    _, memory_reads, names, warnings, _ = turn_calls(
        settings, clock, fake_openai, tmp_path, [read, Reply(text="ok")]
    )
    assert "tool.result" in names
    assert memory_reads == [BLOCKS]
    assert warnings == []


def test_a_turn_that_ends_within_a_second_writes_three_times(
    settings: Settings,
    clock: FrozenClock,
    fake_openai: FakeLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The answer waits for its vector long enough that a busy machine's embedder answers
    # in time: it goes with its copy however fast the test runs.
    monkeypatch.setattr(message_service, "ANSWER_WAITS_FOR_VECTOR_SECONDS", 10.0)
    calls, _, names, _, transactions = turn_calls(
        settings, clock, fake_openai, tmp_path, [Reply(text="Hi there, how are you today?")]
    )
    writes = [what(c) for c in calls if c.operation in WRITES]
    assert writes == [
        ("put", "Lease"),  # taken in the round of the turn's reads
        ("transact_write", "MESSAGE"),  # the opening
        ("transact_write", "MESSAGE"),  # the closing
    ]
    opening, closing = transactions
    # The question, the run, its first event and its live marker.
    assert opening == ["Put Events", "Put MESSAGE", "Put Run", "Put Run"]
    # The answer with its copy, the question's copy, the conversation's last activity
    # (written while it is open: it stands for the copies' checks that it is), the agent's
    # last use, the search's change and version, the last events, the run's end, the live
    # marker's removal and the lease's release.
    assert closing == [
        "Check MESSAGE",
        "Delete Lease",
        "Delete Run",
        "Put Events",
        "Put MESSAGE",
        "Put Recall",
        "Put Recall",
        "Put SearchChange",
        "Update Agent",
        "Update CONVERSATION",
        "Update Run",
        "Update SearchVersion",
    ]
    assert names[-1] == "run.completed"


def test_a_turn_whose_vectors_are_late_ends_with_its_messages_listed_and_found_by_words(
    settings: Settings,
    clock: FrozenClock,
    fake_openai: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A busy embedder does not hold the run's end up, nor leave the turn's messages out of
    what a client reads once it hears the run completed: their copies go without a vector,
    and get one once it is made."""
    gate = threading.Event()
    made = message_service.vector_of

    async def late(search: SearchEngine, message: Message) -> Item:
        await asyncio.to_thread(gate.wait, 30)
        return await made(search, message)

    monkeypatch.setattr(message_service, "vector_of", late)
    with running(settings, clock) as client:
        agent_id = use_openai(client, fake_openai)
        conversation_id = new_conversation(client, agent_id)
        fake_openai.replies.append(Reply(text="Your parcel waits at the depot on Elm Street."))
        found = send(client, conversation_id, "Where is my parcel?")
        assert found[-1].name == "run.completed"
        url = f"/agents/{agent_id}/messages/search"

        def contents(mode: str) -> list[str]:
            answered = client.get(url, params={"query": "parcel depot", "mode": mode})
            assert answered.status_code == 200, answered.text
            return sorted(m["content"] for m in answered.json()["messages"])

        both = ["Where is my parcel?", "Your parcel waits at the depot on Elm Street."]
        assert contents("lexical") == both
        assert contents("semantic") == []  # the vectors are not made yet
        gate.set()
        deadline = time.monotonic() + 20
        while contents("semantic") != both:
            assert time.monotonic() < deadline, "the copies never got their vectors"
            time.sleep(0.05)
