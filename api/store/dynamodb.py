"""The production engine: DynamoDB on AWS, DynamoDB Local or any endpoint.

Reads and writes go through `DynamoHttp` (api/store/dynamodb_http.py): DynamoDB's JSON API
signed and sent on the event loop, without botocore's per-call cost. boto3 stays for what
is not on a request's path: creating the table (its waiter, TTL, point-in-time recovery),
on a thread, as boto3 is synchronous; it also resolves the endpoint, region and
credentials the data path uses. Throttling is retried, and reported as `Throttled` only
once those retries are spent.
"""

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import boto3
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import BotoCoreError, ClientError

from api.kit.clock import Clock, SystemClock
from api.store import codec, rules
from api.store.conditions import is_live
from api.store.definition import TableDefinition
from api.store.dynamodb_http import DynamoHttp, Refused, Unreachable, backoff
from api.store.keys import ENTITY
from api.store.table import (
    BATCH_GET_CHUNK,
    BATCH_WRITE_CHUNK,
    CONDITION_FAILED,
    PK,
    SK,
    TTL,
    AllOf,
    AnyOf,
    AttrAbsent,
    AttrEquals,
    AttrExists,
    Check,
    Condition,
    ConditionFailed,
    Delete,
    InvalidCursor,
    InvalidItem,
    Item,
    ItemAbsent,
    ItemExists,
    ItemTooLarge,
    Key,
    Page,
    Put,
    SkCondition,
    StoreError,
    Throttled,
    TransactionCancelled,
    TxOp,
    Update,
    WriteConflict,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
else:
    DynamoDBClient = Any

log = logging.getLogger(__name__)
T = TypeVar("T")

THROTTLING_CODES = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
}
BATCH_RETRIES = 8
TRANSACTION_CONFLICT_RETRIES = 5


class TableMissing(StoreError):
    status_code = 503
    code = "table_missing"


class StoreUnavailable(StoreError):
    status_code = 503
    code = "store_unavailable"


class _Expression:
    """Placeholders for one request's names and values."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def name(self, name: str) -> str:
        placeholder = f"#n{len(self.names)}"
        for existing, attr in self.names.items():
            if attr == name:
                return existing
        self.names[placeholder] = name
        return placeholder

    def value(self, value: Any) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = codec.to_wire_value(value)
        return placeholder

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.names:
            params["ExpressionAttributeNames"] = self.names
        if self.values:
            params["ExpressionAttributeValues"] = self.values
        return params


def _live(expr: _Expression, now: float) -> str:
    """The expression form of conditions.is_live."""
    ttl = expr.name(TTL)
    return (
        f"(attribute_not_exists({ttl}) OR NOT attribute_type({ttl}, {expr.value('N')})"
        f" OR {ttl} > {expr.value(Decimal(repr(now)))})"
    )


def _condition(cond: Condition, expr: _Expression, now: float) -> str:
    if isinstance(cond, ItemAbsent):
        return f"(attribute_not_exists({expr.name(PK)}) OR NOT {_live(expr, now)})"
    if isinstance(cond, ItemExists):
        return f"(attribute_exists({expr.name(PK)}) AND {_live(expr, now)})"
    # An expired item is no item: it has no attributes to compare.
    if isinstance(cond, AttrEquals):
        return f"({expr.name(cond.name)} = {expr.value(cond.value)} AND {_live(expr, now)})"
    if isinstance(cond, AttrAbsent):
        return f"(attribute_not_exists({expr.name(cond.name)}) OR NOT {_live(expr, now)})"
    if isinstance(cond, AttrExists):
        return f"(attribute_exists({expr.name(cond.name)}) AND {_live(expr, now)})"
    if isinstance(cond, AllOf):
        return "(" + " AND ".join(_condition(c, expr, now) for c in cond.conditions) + ")"
    if isinstance(cond, AnyOf):
        return "(" + " OR ".join(_condition(c, expr, now) for c in cond.conditions) + ")"
    raise InvalidItem(f"Unknown condition {cond!r}")


def _sk_condition(column: str, cond: SkCondition, expr: _Expression) -> str:
    col = expr.name(column)
    simple = {"eq": "=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    if cond.op in simple:
        return f"{col} {simple[cond.op]} {expr.value(cond.value)}"
    if cond.op == "between":
        return f"{col} BETWEEN {expr.value(cond.value)} AND {expr.value(cond.upper)}"
    if cond.op == "begins_with":
        return f"begins_with({col}, {expr.value(cond.value)})"
    raise InvalidItem(f"Unknown sort-key condition {cond.op!r}")


def _update_expression(update: Update, expr: _Expression) -> str:
    sets = [f"{expr.name(k)} = {expr.value(v)}" for k, v in update.set.items()]
    sets += [
        f"{expr.name(k)} = if_not_exists({expr.name(k)}, {expr.value(v)})"
        for k, v in update.set_if_absent.items()
    ]
    clauses = []
    if sets:
        clauses.append("SET " + ", ".join(sets))
    if update.add:
        clauses.append(
            "ADD " + ", ".join(f"{expr.name(k)} {expr.value(v)}" for k, v in update.add.items())
        )
    if update.remove:
        clauses.append("REMOVE " + ", ".join(expr.name(k) for k in update.remove))
    return " ".join(clauses)


def _wire_key(key: Key) -> dict[str, Any]:
    return {PK: {"S": key.pk}, SK: {"S": key.sk}}


def _client_error(e: ClientError) -> StoreError:
    """The typed error for what DynamoDB answered boto3."""
    err = e.response.get("Error", {})
    return _error(err.get("Code", ""), err.get("Message", ""), e.response)


def _error(
    code: str, message: str, answer: Mapping[str, Any], labels: Sequence[str] = ()
) -> StoreError:
    """The typed error for what DynamoDB answered: its error's short name, its message and
    the whole answer (`labels`: a transaction's, in order)."""
    if code == "ConditionalCheckFailedException":
        return ConditionFailed("The item is not in the state the write expected.")
    if code == "TransactionCanceledException":
        reasons = [
            None if r.get("Code") in (None, "None") else r.get("Code")
            for r in answer.get("CancellationReasons", [])
        ]
        return TransactionCancelled(
            f"The transaction was cancelled: {message}", reasons, labels=labels
        )
    if code == "TransactionConflictException":
        return WriteConflict(
            "Another write to the item was under way; try again.", engine="dynamodb"
        )
    if code in THROTTLING_CODES:
        return Throttled("DynamoDB is throttling requests; try again.", engine="dynamodb")
    if code == "ResourceNotFoundException":
        return TableMissing(
            "The DynamoDB table does not exist; create it with `agent-memory create-table`."
        )
    if code == "ValidationException" and (
        "maximum allowed size" in message or "Item size" in message
    ):
        return ItemTooLarge(f"The item is larger than DynamoDB allows: {message}")
    if code == "ValidationException" and "incorrect data type" in message:
        return InvalidItem(f"DynamoDB refused the update: {message}")
    if code == "ValidationException" and "starting key" in message.lower():
        return InvalidCursor("The cursor belongs to another query.")
    return StoreError(f"DynamoDB refused the request ({code}): {message}")


class DynamoTable:
    engine = "dynamodb"

    def __init__(
        self,
        name: str,
        definition: TableDefinition,
        *,
        region: str = "us-east-1",
        endpoint_url: str | None = None,
        clock: Clock | None = None,
        max_attempts: int = 10,
    ) -> None:
        self._name = name
        self._definition = definition
        self._clock = clock or SystemClock()
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="dynamodb")
        self._client, credentials = _client(region, endpoint_url, max_attempts)
        self._http = DynamoHttp(
            self._client.meta.endpoint_url,
            self._client.meta.region_name,
            credentials,
            max_attempts=max_attempts,
        )
        self._closed = False

    @property
    def name(self) -> str:
        return self._name

    @property
    def client(self) -> DynamoDBClient:
        """boto3's client, for managing the table; reads and writes do not use it."""
        return self._client

    async def _send(
        self, operation: str, payload: Mapping[str, Any], labels: Sequence[str] = ()
    ) -> dict[str, Any]:
        if self._closed:
            raise StoreError("The store is closed.")
        try:
            return await self._http.call(operation, payload)
        except Refused as e:
            raise _error(e.code, e.message, e.answer, labels) from e
        except Unreachable as e:
            raise StoreUnavailable(f"DynamoDB cannot be reached: {e}") from e

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._closed:
            raise StoreError("The store is closed.")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, partial(self._call, fn, *args, **kwargs))

    @staticmethod
    def _call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except ClientError as e:
            raise _client_error(e) from e
        except BotoCoreError as e:
            raise StoreUnavailable(f"DynamoDB cannot be reached: {e}") from e

    # --- lifecycle -------------------------------------------------------------------

    async def create(self) -> None:
        await self._run(self._create)

    def _create(self) -> None:
        try:
            self._client.create_table(**self._definition.create_table_params(self._name))
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "ResourceInUseException":
                raise
            return
        self._client.get_waiter("table_exists").wait(
            TableName=self._name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
        )
        self._client.update_time_to_live(
            TableName=self._name,
            TimeToLiveSpecification={
                "Enabled": True,
                "AttributeName": self._definition.ttl_attribute,
            },
        )
        if self._definition.point_in_time_recovery:
            try:
                self._client.update_continuous_backups(
                    TableName=self._name,
                    PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
                )
            except ClientError as e:  # DynamoDB Local has no backups; AWS does
                log.info("point-in-time recovery not enabled: %s", e)

    async def ping(self) -> None:
        await self._send("DescribeTable", {"TableName": self._name})

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._http.close()
        await asyncio.to_thread(self._executor.shutdown)
        self._client.close()

    async def sweep_expired(self) -> int:
        """Nothing to do: DynamoDB's TTL deletes expired items on its own."""
        return 0

    # --- single items ----------------------------------------------------------------

    async def get(self, key: Key) -> Item | None:
        rules.check_key(key)
        response = await self._send(
            "GetItem", {"TableName": self._name, "Key": _wire_key(key), "ConsistentRead": True}
        )
        raw = response.get("Item")
        item = codec.from_wire(raw) if raw else None
        return item if is_live(item, self._clock.now()) else None

    async def put(self, item: Item, *, condition: Condition | None = None) -> None:
        rules.check_item(self._definition, item)
        await self._send("PutItem", self._put_params(item, condition))

    def _put_params(self, item: Item, condition: Condition | None) -> dict[str, Any]:
        params: dict[str, Any] = {"TableName": self._name, "Item": codec.to_wire(item)}
        if condition is not None:
            expr = _Expression()
            params["ConditionExpression"] = _condition(condition, expr, self._clock.now())
            params.update(expr.params())
        return params

    async def update(
        self,
        key: Key,
        *,
        set: Mapping[str, Any] | None = None,
        set_if_absent: Mapping[str, Any] | None = None,
        add: Mapping[str, Any] | None = None,
        remove: Sequence[str] = (),
        condition: Condition | None = None,
    ) -> Item:
        update = Update(key, set or {}, set_if_absent or {}, add or {}, tuple(remove), condition)
        rules.check_update(self._definition, update)
        try:
            response = await self._send(
                "UpdateItem", {**self._update_params(update), "ReturnValues": "ALL_NEW"}
            )
        except ConditionFailed:
            # The guard refused an expired item the sweeper has not deleted yet: delete it,
            # then update from nothing, as on an engine where it is already gone.
            if not await self._purge_expired(update.key):
                raise
            response = await self._send(
                "UpdateItem", {**self._update_params(update), "ReturnValues": "ALL_NEW"}
            )
        return codec.from_wire(response["Attributes"])

    def _update_params(self, update: Update) -> dict[str, Any]:
        expr = _Expression()
        now = self._clock.now()
        # Never update an expired item in place: its stale attributes would come back.
        guard = f"(attribute_not_exists({expr.name(PK)}) OR {_live(expr, now)})"
        if update.condition is not None:
            guard = f"{guard} AND {_condition(update.condition, expr, now)}"
        params: dict[str, Any] = {
            "TableName": self._name,
            "Key": _wire_key(update.key),
            "UpdateExpression": _update_expression(update, expr),
            "ConditionExpression": guard,
        }
        params.update(expr.params())
        return params

    async def _purge_expired(self, key: Key) -> bool:
        """Delete the item if it has expired; whether it did."""
        expr = _Expression()
        ttl = expr.name(TTL)
        try:
            await self._send(
                "DeleteItem",
                {
                    "TableName": self._name,
                    "Key": _wire_key(key),
                    "ConditionExpression": f"attribute_type({ttl}, {expr.value('N')})"
                    f" AND {ttl} <= {expr.value(Decimal(repr(self._clock.now())))}",
                    **expr.params(),
                },
            )
        except ConditionFailed:
            return False
        return True

    async def delete(self, key: Key, *, condition: Condition | None = None) -> None:
        rules.check_key(key)
        await self._send("DeleteItem", self._delete_params(key, condition))

    def _delete_params(self, key: Key, condition: Condition | None) -> dict[str, Any]:
        params: dict[str, Any] = {"TableName": self._name, "Key": _wire_key(key)}
        if condition is not None:
            expr = _Expression()
            params["ConditionExpression"] = _condition(condition, expr, self._clock.now())
            params.update(expr.params())
        return params

    # --- queries ---------------------------------------------------------------------

    async def query(
        self,
        pk: str,
        *,
        sk: SkCondition | None = None,
        index: str | None = None,
        forward: bool = True,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page:
        idx = rules.check_query(self._definition, pk, sk, index, limit)
        shape = rules.query_shape(idx, sk, forward)
        position = rules.decode_cursor(cursor, pk, idx, shape) if cursor is not None else None
        pk_col, sk_col = (PK, SK) if idx is None else (idx.pk, idx.sk)
        expr = _Expression()
        key_condition = f"{expr.name(pk_col)} = {expr.value(pk)}"
        if sk is not None:
            key_condition += " AND " + _sk_condition(sk_col, sk, expr)
        params: dict[str, Any] = {
            "TableName": self._name,
            "KeyConditionExpression": key_condition,
            "FilterExpression": _live(expr, self._clock.now()),
            "ScanIndexForward": forward,
            **expr.params(),
        }
        if idx is None:
            params["ConsistentRead"] = True
        else:
            params["IndexName"] = idx.name
        start = {n: {"S": v} for n, v in position.items()} if position else None
        # Ask for one item more than the page holds, so that a cursor is returned exactly
        # when another item follows; keep reading when the TTL filter thinned a response.
        items: list[Item] = []
        while True:
            request = dict(params)
            if start:
                request["ExclusiveStartKey"] = start
            if limit is not None:
                request["Limit"] = limit + 1 - len(items)
            response = await self._send("Query", request)
            items += [codec.from_wire(raw) for raw in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            if not start or (limit is not None and len(items) > limit):
                break
        if limit is not None and len(items) > limit:
            items = items[:limit]
            return Page(items, rules.encode_cursor(items[-1], idx, shape))
        return Page(items, None)

    async def scan(
        self, *, entity: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Page:
        rules.check_scan(entity, limit)
        shape = rules.scan_shape(entity)
        position = rules.decode_scan_cursor(cursor, shape) if cursor is not None else None
        expr = _Expression()
        live = _live(expr, self._clock.now())
        params: dict[str, Any] = {
            "TableName": self._name,
            "FilterExpression": live
            if entity is None
            else f"{live} AND {expr.name(ENTITY)} = {expr.value(entity)}",
            "ConsistentRead": True,
            **expr.params(),
        }
        start = {n: {"S": v} for n, v in position.items()} if position else None
        # With a limit, a page is one request for `limit + 1` items, so it reads a bounded
        # share of the table however few items the filters keep (DynamoDB's Limit counts
        # items read, not kept). When the extra item is kept, the cursor stops before it;
        # when the response reaches the table's end, there is no cursor. Without a limit,
        # the page is every response up to the end.
        items: list[Item] = []
        while True:
            request = dict(params)
            if start:
                request["ExclusiveStartKey"] = start
            if limit is not None:
                request["Limit"] = limit + 1
            response = await self._send("Scan", request)
            items += [codec.from_wire(raw) for raw in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            if not start or limit is not None:
                break
        if limit is not None and len(items) > limit:
            items = items[:limit]
            return Page(items, rules.encode_cursor(items[-1], None, shape))
        if not start:
            return Page(items, None)
        return Page(items, rules.encode_cursor(codec.from_wire(start), None, shape))

    # --- batches and transactions --------------------------------------------------------

    async def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        wanted = rules.unique_keys(keys)
        for key in wanted:
            rules.check_key(key)
        chunks = [wanted[i : i + BATCH_GET_CHUNK] for i in range(0, len(wanted), BATCH_GET_CHUNK)]
        found: dict[Key, Item] = {}
        for result in await asyncio.gather(*(self._batch_get(c) for c in chunks)):
            found.update(result)
        now = self._clock.now()
        return [found[k] for k in wanted if k in found and is_live(found[k], now)]

    async def _batch_get(self, keys: list[Key]) -> dict[Key, Item]:
        found: dict[Key, Item] = {}
        request: dict[str, Any] = {
            self._name: {"Keys": [_wire_key(k) for k in keys], "ConsistentRead": True}
        }
        for attempt in range(BATCH_RETRIES):
            response = await self._send("BatchGetItem", {"RequestItems": request})
            for raw in response.get("Responses", {}).get(self._name, []):
                item = codec.from_wire(raw)
                found[Key(item[PK], item[SK])] = item
            request = response.get("UnprocessedKeys") or {}
            if not request:
                return found
            await asyncio.sleep(backoff(attempt))
        raise Throttled("DynamoDB left part of a batch read unprocessed.", engine="dynamodb")

    async def batch_write(self, *, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        # Checked before the first request: chunks are separate requests on DynamoDB, so a
        # bad item found late would leave the earlier chunks written. Every put, a replaced
        # one too: a bad item is refused whatever follows it.
        wires: dict[Key, dict[str, codec.Wire]] = {}
        for item in puts:
            key = rules.check_item(self._definition, item)
            wires[key] = codec.to_wire(item)
            codec.check_size(wires[key])
        requests = [
            {"DeleteRequest": {"Key": _wire_key(w)}}
            if isinstance(w, Key)
            else {"PutRequest": {"Item": wires[rules.item_key(w)]}}
            for w in rules.last_write_wins(puts, deletes)
        ]
        chunks = [
            requests[i : i + BATCH_WRITE_CHUNK] for i in range(0, len(requests), BATCH_WRITE_CHUNK)
        ]
        await asyncio.gather(*(self._batch_write(c) for c in chunks))

    async def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        pending: dict[str, Any] = {self._name: requests}
        for attempt in range(BATCH_RETRIES):
            response = await self._send("BatchWriteItem", {"RequestItems": pending})
            pending = response.get("UnprocessedItems") or {}
            if not pending:
                return
            await asyncio.sleep(backoff(attempt))
        raise Throttled("DynamoDB left part of a batch write unprocessed.", engine="dynamodb")

    async def transact_write(self, ops: Sequence[TxOp]) -> None:
        keys = rules.check_transaction(self._definition, ops)
        labels = [op.label for op in ops]
        try:
            await self._transact([self._transact_item(op) for op in ops], labels)
        except TransactionCancelled as e:
            # An Update refused by its guard on an expired item: delete that item and retry.
            refused = [
                key
                for op, key, reason in zip(ops, keys, e.reasons, strict=True)
                if isinstance(op, Update) and reason == CONDITION_FAILED
            ]
            purged = [await self._purge_expired(key) for key in refused]
            if not any(purged):
                raise
            await self._transact([self._transact_item(op) for op in ops], labels)

    async def put_each(self, puts: Sequence[Put]) -> list[bool]:
        # Separate PutItems, not one TransactWriteItems: the latter costs twice the write
        # units, and the puts need not be all or nothing. An item that cannot be stored
        # is refused before any is sent, as SQLite refuses the call.
        rules.check_put_each(self._definition, puts)
        requests = [self._put_params(put.item, put.condition) for put in puts]
        for request in requests:
            codec.check_size(request["Item"])
        results = await asyncio.gather(
            *(self._send("PutItem", request) for request in requests),
            return_exceptions=True,
        )
        failures = [
            result
            for result in results
            if isinstance(result, BaseException) and not isinstance(result, ConditionFailed)
        ]
        for other in failures[1:]:
            log.warning("another put of the same call failed too", exc_info=other)
        if failures:
            raise failures[0]
        return [not isinstance(result, ConditionFailed) for result in results]

    def _transact_item(self, op: TxOp) -> dict[str, Any]:
        if isinstance(op, Put):
            return {"Put": self._put_params(op.item, op.condition)}
        if isinstance(op, Update):
            return {"Update": self._update_params(op)}
        if isinstance(op, Delete):
            return {"Delete": self._delete_params(op.key, op.condition)}
        assert isinstance(op, Check)
        return {"ConditionCheck": self._delete_params(op.key, op.condition)}

    async def _transact(self, items: list[dict[str, Any]], labels: Sequence[str]) -> None:
        # Another transaction on the same items is a transient conflict, never a verdict.
        for attempt in range(TRANSACTION_CONFLICT_RETRIES + 1):
            try:
                await self._send("TransactWriteItems", {"TransactItems": items}, labels)
                return
            except TransactionCancelled as error:
                conflict = all(r in (None, "TransactionConflict") for r in error.reasons)
                if not conflict or attempt == TRANSACTION_CONFLICT_RETRIES:
                    raise
                await asyncio.sleep(backoff(attempt))


def _client(
    region: str, endpoint_url: str | None, max_attempts: int
) -> tuple[DynamoDBClient, Credentials | None]:
    """boto3's client, and the credentials it signs with (None: none were found)."""
    session = boto3.session.Session()
    credentials = session.get_credentials()
    key_id = secret = None
    if endpoint_url and credentials is None:
        # Emulators accept any credentials; a developer should not have to invent some.
        key_id = secret = "local"  # noqa: S105
        credentials = Credentials(key_id, secret)
    client = session.client(
        "dynamodb",
        region_name=region,
        endpoint_url=endpoint_url,
        config=Config(
            retries={"mode": "adaptive", "total_max_attempts": max_attempts},
            connect_timeout=5,
            read_timeout=30,
        ),
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
    )
    return client, credentials
