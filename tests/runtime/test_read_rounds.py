"""What a turn waits for before the LLM is called, counted in sequential store round trips:
the route's ownership read, then one concurrent round of reads (the agent, its core
memory, the provider settings and the recent conversation). The user's message is written
while the LLM call starts: it is started after the reads, and the LLM does not wait for it.

The calls before the LLM are those that started before the fake OpenAI received the
completion request; the app awaits every read before sending it, so the split follows from
causality, not timing."""

from pathlib import Path

from api.config import Settings
from api.kit.clock import FrozenClock
from api.store.definition import load_definition
from api.store.rounds import READS, Call, RoundCounter, rounds
from api.store.sqlite import SqliteTable
from tests.fakes.llm_servers import FakeLLM
from tests.runtime.conftest import new_conversation, running, send, use_openai


def what(call: Call) -> tuple[str, str]:
    """The operation and the kind of item: the sort key's entity prefix."""
    sort_key = call.target.partition(" ")[2]
    return call.operation, sort_key.partition("#")[0]


def calls_before_the_llm(
    settings: Settings, clock: FrozenClock, fake: FakeLLM, tmp_path: Path
) -> list[Call]:
    """One warm-up turn, then the store calls of a second turn made before its LLM call."""
    counter = RoundCounter(
        SqliteTable(tmp_path / "rounds.db", settings.dynamodb_table, load_definition(), clock=clock)
    )
    with running(settings, clock, table=counter) as client:
        conversation_id = new_conversation(client, use_openai(client, fake))
        send(client, conversation_id, "Hello")  # warm-up: the local user, the provider
        clock.advance(1)
        mark, sent = counter.mark(), len(fake.request_times)
        found = send(client, conversation_id, "Hello again")
        calls = counter.since(mark)
    assert [e.name for e in found][-2:] == ["message", "run.completed"]
    assert len(fake.request_times) == sent + 1, "the turn should call the LLM once"
    arrived = fake.request_times[-1]
    before = sorted((c for c in calls if c.start < arrived), key=lambda c: c.start)
    assert all(c.end <= arrived for c in before if c.operation in READS), "reads are done"
    return before


def test_reads_before_the_llm_are_two_rounds(
    settings: Settings, clock: FrozenClock, fake_openai: FakeLLM, tmp_path: Path
) -> None:
    before = calls_before_the_llm(settings, clock, fake_openai, tmp_path)
    reads = [c for c in before if c.operation in READS]
    writes = [c for c in before if c.operation not in READS]

    assert rounds(reads) == 2
    ownership, *concurrent = reads
    assert what(ownership) == ("get", "CONVERSATION")
    assert ownership.end <= min(c.start for c in concurrent)
    # The core memory is one query: the block definitions, their lines (and the warning
    # counts) lie side by side, from `CapacityWarning#` on.
    assert sorted(what(c) for c in concurrent) == [
        ("get", "Agent"),
        ("query", "CapacityWarning"),
        ("query", "MESSAGE"),
        ("query", "ProviderSettings"),
    ]
    # The conversation's lease, taken in the round of reads (not after it).
    lease, *started = writes
    assert what(lease) == ("put", "Lease")
    assert lease.start < min(c.end for c in concurrent)
    # The user's message with the run, its first event and its marker (one transaction,
    # not a write of the run's own), if it started before the request reached the LLM:
    # after the reads.
    assert {what(c) for c in started} <= {("transact_write", "MESSAGE")}
    assert all(w.start >= max(c.end for c in reads) for w in started)


def test_the_run_opens_in_the_user_messages_transaction(
    settings: Settings, clock: FrozenClock, fake_openai: FakeLLM, tmp_path: Path
) -> None:
    """One write, not two, before `run.started`: the user's message with the run, its first
    event and its marker; and the run is there to be read once the stream has said so."""
    counter = RoundCounter(
        SqliteTable(tmp_path / "open.db", settings.dynamodb_table, load_definition(), clock=clock)
    )
    with running(settings, clock, table=counter) as client:
        conversation_id = new_conversation(client, use_openai(client, fake_openai))
        mark = counter.mark()
        found = send(client, conversation_id, "Hello")
        calls = sorted(counter.since(mark), key=lambda c: c.start)
        run_id = found[0].data["run_id"]
        assert client.get(f"/runs/{run_id}").status_code == 200
    writes = [what(c) for c in calls if c.operation not in READS]
    assert writes[:2] == [("put", "Lease"), ("transact_write", "MESSAGE")]
    assert ("batch_write", "") not in writes  # no write of the run's own
