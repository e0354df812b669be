"""Throttling, a busy database and an unreachable endpoint become typed errors."""

import asyncio
import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from api.kit.clock import SystemClock
from api.repositories import Repositories
from api.runtime.lease import ConversationBusy, Lease, Renewals
from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable, StoreUnavailable
from api.store.sqlite import SqliteTable
from api.store.table import ItemAbsent, Key, Put, Throttled, WriteConflict
from tests.parallel import free_port


class ThrottlingDynamo(BaseHTTPRequestHandler):
    """Answers every DynamoDB request the way DynamoDB does when it throttles."""

    requests = 0

    def do_POST(self) -> None:
        type(self).requests += 1
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        answer(
            self,
            400,
            "ProvisionedThroughputExceededException",
            "The level of configured provisioned throughput was exceeded",
        )

    def log_message(self, format: str, *args: object) -> None:
        pass


def answer(
    handler: BaseHTTPRequestHandler, status: int, error: str | None = None, message: str = ""
) -> None:
    """A DynamoDB answer: empty, or the error `error` (its short name) saying `message`."""
    body: dict[str, str] = (
        {} if error is None else {"__type": f"com.amazonaws.dynamodb.v20120810#{error}"}
    )
    if message:
        body["message"] = message
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/x-amz-json-1.0")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@pytest.fixture
def throttling_endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ThrottlingDynamo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


async def test_dynamodb_throttling_is_retried_then_typed(throttling_endpoint: str) -> None:
    ThrottlingDynamo.requests = 0
    table = DynamoTable("t", load_definition(), endpoint_url=throttling_endpoint, max_attempts=3)
    with pytest.raises(Throttled):
        await table.get(Key("a", "b"))
    assert ThrottlingDynamo.requests == 3  # retried before giving up
    await table.close()


class PutItemDynamo(BaseHTTPRequestHandler):
    """PutItem as DynamoDB answers it: refused by its condition when it has one, throttled
    for the item whose sort key is "throttled", made otherwise."""

    made: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        sk = request["Item"]["sk"]["S"]
        if "ConditionExpression" in request:
            answer(self, 400, "ConditionalCheckFailedException", "The conditional request failed")
        elif sk == "throttled":
            answer(self, 400, "ProvisionedThroughputExceededException", "Throughput exceeded")
        else:
            type(self).made.append(sk)
            answer(self, 200)

    def log_message(self, format: str, *args: object) -> None:
        pass


async def test_put_each_raises_a_failure_other_than_a_refused_condition() -> None:
    PutItemDynamo.made = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), PutItemDynamo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    table = DynamoTable("t", load_definition(), endpoint_url=endpoint, max_attempts=1)
    try:
        with pytest.raises(Throttled):
            await table.put_each(
                [
                    Put({"pk": "a", "sk": "refused"}, condition=ItemAbsent()),
                    Put({"pk": "a", "sk": "throttled"}),
                    Put({"pk": "a", "sk": "made"}),
                ]
            )
        assert PutItemDynamo.made == ["made"]  # the others are sent regardless
    finally:
        await table.close()
        server.shutdown()


async def test_an_unreachable_dynamodb_is_a_typed_error() -> None:
    table = DynamoTable(
        "t", load_definition(), endpoint_url=f"http://127.0.0.1:{free_port()}", max_attempts=1
    )
    with pytest.raises(StoreUnavailable):
        await table.ping()
    await table.close()


async def test_a_locked_sqlite_file_is_reported_as_throttled(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    table = SqliteTable(path, "busy", load_definition(), busy_timeout_ms=50)
    await table.create()
    await table.put({"pk": "a", "sk": "b", "v": 1})
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(Throttled):
            await table.put({"pk": "a", "sk": "b", "v": 2})
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert (await table.get(Key("a", "b")) or {})["v"] == 1
    await table.close()


async def test_two_connections_to_one_file_lose_no_update(tmp_path: Path) -> None:
    """Like two server processes on one file: WAL and IMMEDIATE transactions serialize them."""
    path = tmp_path / "shared.db"
    first = SqliteTable(path, "shared", load_definition())
    second = SqliteTable(path, "shared", load_definition())
    await first.create()
    key = Key("Agent#a1", "CoreMemory#human")
    await asyncio.gather(*(t.update(key, add={"n": 1}) for _ in range(25) for t in (first, second)))
    assert (await first.get(key) or {})["n"] == 50
    await first.close()
    await second.close()


class ConflictingDynamo(BaseHTTPRequestHandler):
    """DynamoDB while a transaction writes the conversation's lease: a PutItem of that item
    is refused with TransactionConflictException; a GetItem finds the lease held."""

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        operation = self.headers["X-Amz-Target"].rpartition(".")[2]
        if operation == "PutItem":
            answer(self, 400, "TransactionConflictException", "Transaction is ongoing")
            return
        item = {**request["Key"], "holder": {"S": "r1"}, "ttl": {"N": "4000000000"}}
        data = json.dumps({"Item": item}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


async def test_a_write_that_meets_a_transaction_is_a_conflict_and_a_lease_is_busy() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ConflictingDynamo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    table = DynamoTable("t", load_definition(), endpoint_url=endpoint, max_attempts=1)
    repos = Repositories.over(table)
    try:
        with pytest.raises(WriteConflict):
            await table.put({"pk": "a", "sk": "b"}, condition=ItemAbsent())
        # A turn starting as the one before it ends hears "busy", as it would a moment
        # before, not a store failure.
        lease = Lease(repos.conversations, SystemClock(), "c1", "r2", renewals=Renewals())
        with pytest.raises(ConversationBusy):
            await lease.take()
    finally:
        await table.close()
        server.shutdown()
