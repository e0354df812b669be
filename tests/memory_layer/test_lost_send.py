"""A memory run whose send to the queue failed is not lost: it is in the table, and the
sweep sends it once nobody has taken charge of it for STALE_SECONDS."""

import logging
from pathlib import Path

import pytest

from api.kit.clock import FrozenClock
from api.memory_runs import service as memory_runs
from api.observability import metrics
from api.queue.base import Delivery, RunQueue
from tests.memory_layer.conftest import initialize, run_of, said, settings_for, until_ended
from tests.observability.conftest import grew, parse
from tests.runtime.conftest import running


class SendFailsOnce:
    """The app's queue, unreachable for its first send (an SQS outage, say)."""

    def __init__(self, queue: RunQueue) -> None:
        self.queue = queue
        self.refused: list[str] = []

    @property
    def name(self) -> str:
        return self.queue.name

    async def send(self, group: str, run_id: str) -> None:
        if not self.refused:
            self.refused.append(run_id)
            raise ConnectionError("The queue cannot be reached.")
        await self.queue.send(group, run_id)

    async def receive(self, *, wait_seconds: float) -> list[Delivery]:
        return await self.queue.receive(wait_seconds=wait_seconds)

    async def extend(self, delivery: Delivery, seconds: float) -> None:
        await self.queue.extend(delivery, seconds)

    async def retry(self, delivery: Delivery, delay_seconds: float) -> None:
        await self.queue.retry(delivery, delay_seconds)

    async def ack(self, delivery: Delivery) -> None:
        await self.queue.ack(delivery)

    async def aclose(self) -> None:
        await self.queue.aclose()


def test_a_run_whose_send_failed_is_sent_by_the_sweep(
    tmp_path: Path,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(memory_runs, "SWEEP_SECONDS", 0.05)
    settings = settings_for(tmp_path, memory_run_wait_seconds=0.2)
    with running(settings, clock) as client:
        runner: memory_runs.MemoryRunner = client.app_state["memory_runs"]
        queue = SendFailsOnce(runner.queue)
        runner.queue = queue
        initialize(client)
        before = parse(metrics.render().decode())
        with caplog.at_level(logging.WARNING, logger=memory_runs.__name__):
            added = client.post(
                "/memory/add",
                json={"user_id": "customer_123", "messages": [said("user", "I like tea.")]},
            )
        assert added.status_code == 202, added.text
        run_id = added.json()["run_id"]
        assert queue.refused == [run_id]
        assert f"sending memory run {run_id} failed" in caplog.text
        # Stored, and not sent: it waits for the sweep, which leaves it while it is fresh.
        assert run_of(client, run_id)["status"] == "queued"
        clock.advance(memory_runs.STALE_SECONDS + 1)
        assert until_ended(client, run_id)["status"] == "completed"
        after = parse(metrics.render().decode())
    assert grew(before, after, "agent_memory_background_runs_swept_total", kind="memory") == 1
