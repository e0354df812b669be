"""A memory run in progress when its server is killed (kill -9 of a real server process)
completes after a restart: the new process finds the run's marker naming a dead process,
takes the subject's lease from it and runs the run again."""

import time
from pathlib import Path

from tests.fakes.llm_servers import FakeLLM, Reply
from tests.journal.test_crash import kill_9, server_process
from tests.runtime.conftest import OPENAI_KEY


def test_a_run_cut_by_kill_9_completes_after_a_restart(
    tmp_path: Path, fake_openai: FakeLLM
) -> None:
    db = tmp_path / "crash.db"
    with server_process(db) as (http, process):
        saved = http.put(
            "/settings/providers/openai",
            json={"api_key": OPENAI_KEY, "base_url": fake_openai.base_url},
        )
        assert saved.status_code == 200, saved.text
        made = http.post(
            "/memory/initialize",
            json={"user_id": "customer_123", "provider": "openai", "model": "gpt-4o-mini"},
        )
        assert made.status_code == 200, made.text
        fake_openai.replies.append(Reply(text="never heard", delay_seconds=8))
        added = http.post(
            "/memory/add",
            json={
                "user_id": "customer_123",
                "messages": [{"role": "user", "content": "Remember the blue door"}],
                "wait_for_completion": False,
            },
        )
        assert added.status_code == 202, added.text
        run_id = added.json()["run_id"]
        deadline = time.monotonic() + 20
        while http.get(f"/memory/runs/{run_id}").json()["status"] != "running":
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.05)
        while len(fake_openai.requests) < 1:  # its model was asked
            assert time.monotonic() < deadline
            time.sleep(0.05)
        kill_9(process)

    fake_openai.replies.append(Reply(text="Noted the blue door."))
    with server_process(db) as (http, _):
        deadline = time.monotonic() + 30
        while (run := http.get(f"/memory/runs/{run_id}").json())["status"] != "completed":
            assert run["status"] in ("queued", "running"), run
            assert time.monotonic() < deadline, run
            time.sleep(0.1)
        assert run["attempts"] == 2
        assert run["result"] == "Noted the blue door."
        assert "Remember the blue door" in str(fake_openai.requests[-1]["messages"])
