"""The queue adapters' own contract: what is sent is received, a retry comes back, an ack
ends it; SQS FIFO keeps a group's order, deduplicates by run id and sends a run received
too often to its dead-letter queue (on moto)."""

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from moto import mock_aws

from api.queue import sqs
from api.queue.base import RunQueue
from api.queue.local import LocalQueue


@pytest.fixture(params=["local", "sqs"])
async def queue(request: pytest.FixtureRequest) -> AsyncIterator[RunQueue]:
    if request.param == "local":
        local = LocalQueue()
        yield local
        await local.aclose()
        return
    with mock_aws():
        client = sqs.client("us-east-1")
        url = sqs.create_queues(client, f"q-{uuid.uuid4().hex[:8]}", max_receives=3)
        remote = sqs.SqsQueue(client, url)
        yield remote
        await remote.aclose()


async def test_sent_received_retried_acked(queue: RunQueue) -> None:
    await queue.send("agent-a", "run-1")
    (got,) = await queue.receive(wait_seconds=1)
    assert (got.group, got.run_id) == ("agent-a", "run-1")
    await queue.extend(got, 30)
    await queue.retry(got, 0)
    await asyncio.sleep(0.05)
    (again,) = await queue.receive(wait_seconds=1)
    assert again.run_id == "run-1"
    await queue.ack(again)
    assert await queue.receive(wait_seconds=0) == []


async def test_a_run_sent_twice_is_received_once(queue: RunQueue) -> None:
    await queue.send("agent-a", "run-1")
    await queue.send("agent-a", "run-1")
    (got,) = await queue.receive(wait_seconds=1)
    await queue.ack(got)
    assert await queue.receive(wait_seconds=0) == []


async def test_sqs_keeps_a_groups_order_and_holds_it_while_one_is_out() -> None:
    with mock_aws():
        client = sqs.client("us-east-1")
        queue = sqs.SqsQueue(client, sqs.create_queues(client, "ordered"))
        for n in range(3):
            await queue.send("agent-a", f"run-{n}")
        (first,) = await queue.receive(wait_seconds=0)
        assert first.run_id == "run-0"
        assert await queue.receive(wait_seconds=0) == []  # the group waits for run-0
        await queue.ack(first)
        (second,) = await queue.receive(wait_seconds=0)
        assert second.run_id == "run-1"
        await queue.aclose()


async def test_sqs_sends_a_run_received_too_often_to_the_dead_letter_queue() -> None:
    with mock_aws():
        client = sqs.client("us-east-1")
        url = sqs.create_queues(client, "redriven", max_receives=2)
        queue = sqs.SqsQueue(client, url)
        await queue.send("agent-a", "run-doomed")
        for _ in range(2):
            (got,) = await queue.receive(wait_seconds=0)
            await queue.retry(got, 0)
        assert await queue.receive(wait_seconds=0) == []
        dead_url = client.get_queue_url(QueueName="redriven-dlq.fifo")["QueueUrl"]
        dead = client.receive_message(QueueUrl=dead_url)["Messages"]
        assert '"run-doomed"' in dead[0]["Body"]
        await queue.aclose()
