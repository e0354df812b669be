"""Several replicas: an SQS FIFO queue. A run is a message in its subject's group
(MessageGroupId = the agent id), so SQS hands out one group's runs one at a time and in
order, and deduplicated by run id (MessageDeduplicationId). A received run stays invisible
to other replicas while its worker extends its visibility; a worker that dies lets it
reappear when the visibility lapses; one that keeps failing sends it, after the redrive
policy's receives, to the dead-letter queue. The run's state stays in the table: the queue
only says which run is next.

boto3 is synchronous: every call hops to this adapter's own threads."""

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import boto3
from botocore.config import Config

from api.queue.base import Delivery

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
else:
    SQSClient = Any

T = TypeVar("T")
VISIBILITY_SECONDS = 60  # a received run is ours this long unless extended
MAX_RECEIVES = 10  # receives before a run goes to the dead-letter queue
MAX_VISIBILITY_SECONDS = 43_200  # SQS's own bound
DEAD_LETTER_RETENTION_SECONDS = 1_209_600  # 14 days, SQS's longest: time to look into them


def client(region: str, endpoint_url: str | None = None) -> SQSClient:
    config = Config(retries={"mode": "adaptive", "max_attempts": 5})
    made: SQSClient = boto3.client(
        "sqs", region_name=region, endpoint_url=endpoint_url, config=config
    )
    return made


def create_queues(sqs: SQSClient, name: str, *, max_receives: int = MAX_RECEIVES) -> str:
    """The FIFO queue `{name}.fifo` and its dead-letter queue `{name}-dlq.fifo` (for tests
    and first deployments; idempotent); the queue's URL."""
    dead = sqs.create_queue(
        QueueName=f"{name}-dlq.fifo",
        Attributes={
            "FifoQueue": "true",
            "MessageRetentionPeriod": str(DEAD_LETTER_RETENTION_SECONDS),
        },
    )
    dead_arn = sqs.get_queue_attributes(QueueUrl=dead["QueueUrl"], AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    made = sqs.create_queue(
        QueueName=f"{name}.fifo",
        Attributes={
            "FifoQueue": "true",
            "ContentBasedDeduplication": "false",
            "VisibilityTimeout": str(VISIBILITY_SECONDS),
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dead_arn, "maxReceiveCount": str(max_receives)}
            ),
        },
    )
    url: str = made["QueueUrl"]
    return url


class SqsQueue:
    name = "sqs"

    def __init__(self, sqs: SQSClient, queue_url: str, *, threads: int = 4) -> None:
        self._sqs = sqs
        self.queue_url = queue_url
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sqs")

    async def _call(self, fn: Any, /, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, partial(fn, **kwargs))

    async def send(self, group: str, run_id: str) -> None:
        await self._call(
            self._sqs.send_message,
            QueueUrl=self.queue_url,
            MessageBody=json.dumps({"group": group, "run_id": run_id}),
            MessageGroupId=group,
            MessageDeduplicationId=run_id,
        )

    async def receive(self, *, wait_seconds: float) -> list[Delivery]:
        found = await self._call(
            self._sqs.receive_message,
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=1,
            WaitTimeSeconds=max(0, min(20, int(wait_seconds))),
            VisibilityTimeout=VISIBILITY_SECONDS,
        )
        deliveries = []
        for message in found.get("Messages", []):
            body = json.loads(message["Body"])
            deliveries.append(
                Delivery(str(body["group"]), str(body["run_id"]), message["ReceiptHandle"])
            )
        return deliveries

    async def _visible_in(self, delivery: Delivery, seconds: float) -> None:
        await self._call(
            self._sqs.change_message_visibility,
            QueueUrl=self.queue_url,
            ReceiptHandle=delivery.receipt,
            VisibilityTimeout=max(0, min(MAX_VISIBILITY_SECONDS, int(seconds))),
        )

    async def extend(self, delivery: Delivery, seconds: float) -> None:
        await self._visible_in(delivery, seconds)

    async def retry(self, delivery: Delivery, delay_seconds: float) -> None:
        await self._visible_in(delivery, delay_seconds)

    async def ack(self, delivery: Delivery) -> None:
        await self._call(
            self._sqs.delete_message, QueueUrl=self.queue_url, ReceiptHandle=delivery.receipt
        )

    async def aclose(self) -> None:
        """Once the calls under way have ended (a receive long-polls for at most
        MEMORY_QUEUE_WAIT_SECONDS): none is left running after its owner is gone."""
        await asyncio.get_running_loop().run_in_executor(
            None, partial(self._pool.shutdown, wait=True, cancel_futures=True)
        )
