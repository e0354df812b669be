"""A server killed (kill -9, a real process) while an orchestrator's specialist answers and
the person's client still reads: both runs end as interrupted at the next start, both
conversations hold what was said (the orchestrator's question to the specialist; what the
specialist was asked and the draft of its answer), and the next turn asks the specialist
again at once."""

import json
import time
from collections.abc import Iterator
from pathlib import Path

from tests.fakes.llm_servers import FakeLLM, Reply, ToolCallScript
from tests.journal.test_crash import kill_9, server_process, state_once_settled
from tests.journal.test_resume import STORY, read_events, start_turn
from tests.runtime.conftest import Event, messages, parse_sse, use_openai


def ask_billing(request: str) -> Reply:
    return Reply(tool_calls=[ToolCallScript("ask_billing", json.dumps({"request": request}))])


def first_events(chunks: Iterator[str], count: int) -> list[Event]:
    """The first `count` events from a stream's text, which stays open (a stream left
    unread would be closed with it: the client gone, the turn stopped for that)."""
    found: list[Event] = []
    buffer = ""
    while len(found) < count:
        buffer += next(chunks)
        *blocks, buffer = buffer.replace("\r\n", "\n").split("\n\n")
        for block in blocks:
            found += parse_sse(block + "\n\n")[0]
    return found


def test_killed_during_a_specialists_turn_both_conversations_stay_consistent(
    tmp_path: Path, fake_openai: FakeLLM
) -> None:
    db = tmp_path / "crash.db"
    with server_process(db) as (http, process):
        billing = use_openai(http, fake_openai, "Billing")
        desk = use_openai(http, fake_openai, "Desk")
        assert http.patch(f"/agents/{desk}", json={"specialists": [billing]}).status_code == 200
        fake_openai.replies += [
            ask_billing("Tell me a story"),
            # The role, then "word0" to " word4"; then the specialist's model hangs.
            Reply(text=STORY, stall_after_chunks=6),
        ]
        with start_turn(http, desk) as response:
            chunks = response.iter_text()
            # run.started, tool.call, then the specialist's run.started and five words.
            seen = first_events(chunks, 8)
            time.sleep(1.4)  # past the drafts' second: what the specialist said is written
            kill_9(process)
    assert [e.name for e in seen[:2]] == ["run.started", "tool.call"]
    assert [e.data["event"] for e in seen[2:8]] == ["run.started"] + ["text.delta"] * 5
    run_id = seen[0].data["run_id"]
    nested = seen[2].data["payload"]

    with server_process(db) as (http, _):
        assert state_once_settled(http, run_id) == "interrupted"
        assert state_once_settled(http, nested["run_id"]) == "interrupted"
        # The orchestrator's conversation: the person's question and the call it made.
        asked = messages(http, seen[0].data["conversation_id"])
        assert [(m["role"], m["content"]) for m in asked] == [
            ("user", "Tell me a story"),
            ("assistant", ""),
        ]
        assert asked[1]["tool_calls"][0]["name"] == "ask_billing"
        # The specialist's: what it was asked, by the orchestrator, and its draft.
        answered = messages(http, nested["conversation_id"])
        assert [(m["role"], m["actor_id"], m["interrupted"]) for m in answered] == [
            ("user", desk, False),
            ("assistant", desk, True),
        ]
        assert answered[1]["content"] == "word0 word1 word2 word3 word4"
        replayed = parse_sse(http.get(f"/runs/{run_id}/events").text)[0]
        assert [e.name for e in replayed][-2:] == ["error", "run.failed"]

        # The next turn asks the specialist again: the sweep freed both conversations.
        fake_openai.replies += [
            ask_billing("Go on with the story"),
            Reply(text="word5 word6."),
            Reply(text="The end."),
        ]
        with http.stream(
            "POST",
            "/chat",
            json={"agent_id": desk, "prompt": "Go on", "session_id": "story", "wait": True},
            timeout=60,
        ) as again:
            found = read_events(again)
        results = [e.data["content"] for e in found if e.name == "tool.result"]
        assert results == ["word5 word6."]
        assert found[-1].name == "run.completed"
