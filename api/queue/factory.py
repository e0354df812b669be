"""The one place a queue adapter is chosen: MEMORY_QUEUE=local (the default) or sqs."""

from api.config import Settings
from api.queue.base import RunQueue


def get_queue(settings: Settings) -> RunQueue:
    if settings.memory_queue == "sqs":
        from api.queue import sqs  # boto3's SQS client only when chosen

        assert settings.sqs_queue_url is not None  # check_settings requires it
        endpoint = str(settings.sqs_endpoint_url) if settings.sqs_endpoint_url else None
        return sqs.SqsQueue(sqs.client(settings.aws_region, endpoint), settings.sqs_queue_url)
    from api.queue.local import LocalQueue

    return LocalQueue()
