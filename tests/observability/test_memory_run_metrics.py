"""Seed 004's memory runs in the background-runs gauge: counted while an attempt runs (its
model, the fake OpenAI, holding its answer), and no longer once the process let it go."""

import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from api.config import Settings
from api.main import create_app
from api.observability import metrics
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.observability.conftest import loopback_client, scrape, value
from tests.runtime.conftest import OPENAI_KEY

RUNNING = {"kind": "memory", "state": "running"}
GAUGE = "agent_memory_background_runs"


def running_now() -> float:
    """The gauge as this process holds it (the app's /metrics is gone once it stopped)."""
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            if sample.name == GAUGE and sample.labels == RUNNING:
                return sample.value
    return 0.0


def test_a_memory_run_is_counted_while_it_runs(tmp_path: Path, fake_openai: FakeLLM) -> None:
    settings = Settings(
        store="sqlite",
        sqlite_path=tmp_path / "runs.db",
        dynamodb_table="observed",
        memory_embedding_backend="none",
        encryption_key="k" * 40,
    )
    before = running_now()
    with loopback_client(create_app(settings)) as client:
        saved = client.put(
            "/settings/providers/openai",
            json={"api_key": OPENAI_KEY, "base_url": fake_openai.base_url},
        )
        assert saved.status_code == 200, saved.text
        made = client.post(
            "/memory/initialize",
            json={"user_id": "ada", "provider": "openai", "model": "gpt-4o-mini"},
        )
        assert made.status_code == 200, made.text
        fake_openai.replies.append(Reply(text="never heard", delay_seconds=60))
        added = client.post(
            "/memory/add",
            json={
                "user_id": "ada",
                "messages": [{"role": "user", "content": "Remember the blue door"}],
                "wait_for_completion": False,
            },
        )
        assert added.status_code == 202, added.text
        deadline = time.monotonic() + 20
        while not fake_openai.requests:  # the run's model was asked: the attempt is on
            assert time.monotonic() < deadline, "the memory run never asked its model"
            time.sleep(0.05)
        assert value(scrape(client), GAUGE, **RUNNING) == before + 1
    # Stopping the app stopped its workers, and the attempt with them.
    assert running_now() == before
