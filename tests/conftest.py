import os
import time
from collections.abc import Iterator

import pytest

from api.kit.clock import FrozenClock
from api.store.dynamodb_local import DynamoDBLocal, DynamoDBLocalUnavailable

# boto3 must never reach a real AWS account from a test.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_PROFILE", None)

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture
def clock() -> FrozenClock:
    # Real time, frozen: DynamoDB Local's own TTL sweeper sees the same present as the test.
    return FrozenClock(float(int(time.time())))


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[DynamoDBLocal]:
    """One DynamoDB Local for the whole run. In CI it must run: never skipped there."""
    try:
        server = DynamoDBLocal().start()
    except DynamoDBLocalUnavailable as e:
        if IN_CI:
            pytest.fail(f"DynamoDB Local must run in CI: {e}")
        pytest.skip(f"DynamoDB Local unavailable: {e}")
    yield server
    server.stop()
