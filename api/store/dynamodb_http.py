"""DynamoDB's JSON API over aiohttp, signed with SigV4: the DynamoDB adapter's data path.

Through boto3 a call cost 1.4-2.3 ms of CPU (botocore checks the request against the
service model, serialises it, signs it, parses the answer back through the model), on a
thread, with a hop to it and back. DynamoDB's API is JSON over HTTP POST
(`X-Amz-Target: DynamoDB_20120810.<Operation>`), and the adapter already speaks its wire
format (api/store/codec.py), so a request here is one JSON encoding, one signature and
one aiohttp POST on the event loop.

What boto3 resolves stays boto3's: the adapter builds its boto3 client (kept for creating
the table) and hands this client that client's endpoint and region, and the credentials
botocore found (environment, profiles, SSO, web identity, container and instance roles).
Credentials that expire are refreshed by botocore, off the event loop, before they are
due. Retried as botocore's standard mode retries: throttling, 5xx, a connection that
failed, with jittered exponential backoff, up to `max_attempts` in all. Not carried over:
botocore's adaptive mode (its client-side rate limiter) and its CRC32 check of answers.
"""

import asyncio
import base64
import datetime
import hashlib
import hmac
import json
import random
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
from botocore.credentials import Credentials, ReadOnlyCredentials, RefreshableCredentials
from botocore.exceptions import BotoCoreError

SERVICE = "dynamodb"
TARGET_PREFIX = "DynamoDB_20120810."
CONTENT_TYPE = "application/x-amz-json-1.0"
ALGORITHM = "AWS4-HMAC-SHA256"
CONNECTIONS = 64  # per event loop
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0

# What botocore's standard retry mode retries (botocore/retries/standard.py).
THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "EC2ThrottledException",
    }
)
TRANSIENT_CODES = frozenset(
    {"RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete"}
)
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})


class Refused(Exception):
    """DynamoDB answered with an error: `code` is its short name (ConditionalCheckFailed-
    Exception), `answer` the whole JSON body (a cancelled transaction's reasons are in it)."""

    def __init__(self, status: int, code: str, message: str, answer: Mapping[str, Any]) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.status = status
        self.code = code
        self.message = message
        self.answer = answer


class Unreachable(Exception):
    """No answer: the connection failed or timed out, or there are no credentials."""


def _json_default(value: Any) -> Any:
    # The codec keeps binary values as bytes, as boto3 takes them; the JSON API wants base64.
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


_ENCODER = json.JSONEncoder(default=_json_default, separators=(",", ":"))


def encode(payload: Mapping[str, Any]) -> bytes:
    """The request's body: orjson's, or the standard library's for what orjson refuses (a
    lone surrogate, escaped, for DynamoDB to refuse as boto3 sent it)."""
    try:
        return orjson.dumps(payload, default=_json_default)
    except TypeError:  # orjson.JSONEncodeError
        return _ENCODER.encode(payload).encode("ascii")


def decode(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except ValueError:  # orjson.JSONDecodeError
        return json.loads(body)


def refused(status: int, body: bytes) -> Refused:
    """The error an answer that is not 200 holds."""
    try:
        answer = decode(body)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return Refused(status, f"HTTP{status}", body[:200].decode("utf-8", "replace"), {})
    code = str(answer.get("__type", f"HTTP{status}")).rsplit("#", 1)[-1]
    message = str(answer.get("message") or answer.get("Message") or "")
    return Refused(status, code, message, answer)


def retried(error: Refused) -> bool:
    return (
        error.code in THROTTLING_CODES
        or error.code in TRANSIENT_CODES
        or error.status in TRANSIENT_STATUSES
    )


def backoff(attempt: int) -> float:
    """Seconds to wait before retry `attempt + 1`: exponential, jittered, at most 1 s."""
    return min(1.0, 0.025 * 2.0**attempt) * random.uniform(0.5, 1.0)  # noqa: S311


def host_of(endpoint: str) -> str:
    """The Host header a request to `endpoint` carries (and is signed with)."""
    parts = urlsplit(endpoint)
    host = parts.netloc.rsplit("@", 1)[-1]
    default = {"https": ":443", "http": ":80"}.get(parts.scheme)
    if default and host.endswith(default):
        host = host[: -len(default)]
    return host


class Signer:
    """AWS Signature Version 4 for DynamoDB's POSTs (the headers they carry, signed)."""

    def __init__(self, region: str, host: str) -> None:
        self._region = region
        self._host = host
        self._key: tuple[str, str, bytes] | None = None  # date, secret, signing key

    def _signing_key(self, secret: str, date: str) -> bytes:
        if self._key is None or self._key[0] != date or self._key[1] != secret:
            key = _hmac(("AWS4" + secret).encode("utf-8"), date)
            for part in (self._region, SERVICE, "aws4_request"):
                key = _hmac(key, part)
            self._key = (date, secret, key)
        return self._key[2]

    def headers(
        self,
        credentials: ReadOnlyCredentials,
        target: str,
        body: bytes,
        now: datetime.datetime | None = None,
    ) -> dict[str, str]:
        now = now or datetime.datetime.now(datetime.UTC)
        amz_date = now.strftime("%Y%m%dT%H%M%SZ")
        date = amz_date[:8]
        signed = {
            "content-type": CONTENT_TYPE,
            "host": self._host,
            "x-amz-date": amz_date,
            "x-amz-target": target,
        }
        if credentials.token:
            signed["x-amz-security-token"] = credentials.token
        names = sorted(signed)
        signed_headers = ";".join(names)
        canonical = "POST\n/\n\n{}\n{}\n{}".format(
            "".join(f"{name}:{signed[name]}\n" for name in names),
            signed_headers,
            hashlib.sha256(body).hexdigest(),
        )
        scope = f"{date}/{self._region}/{SERVICE}/aws4_request"
        to_sign = (
            f"{ALGORITHM}\n{amz_date}\n{scope}\n"
            + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        )
        signature = hmac.new(
            self._signing_key(credentials.secret_key or "", date),
            to_sign.encode("utf-8"),
            hashlib.sha256,
        ).hexdigest()
        headers = {
            "Content-Type": CONTENT_TYPE,
            "Host": self._host,
            "X-Amz-Date": amz_date,
            "X-Amz-Target": target,
            "Authorization": f"{ALGORITHM} Credential={credentials.access_key}/{scope}, "
            f"SignedHeaders={signed_headers}, Signature={signature}",
            "Accept-Encoding": "identity",
        }
        if credentials.token:
            headers["X-Amz-Security-Token"] = credentials.token
        return headers


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


class DynamoHttp:
    """Sends DynamoDB operations on the running event loop, one connection pool per loop
    (an aiohttp session belongs to the loop it was made on; the app and a test's fixtures
    may run on different ones)."""

    def __init__(
        self,
        endpoint: str,
        region: str,
        credentials: Credentials | None,
        *,
        max_attempts: int = 10,
    ) -> None:
        self._url = endpoint if urlsplit(endpoint).path else endpoint + "/"
        self._signer = Signer(region, host_of(endpoint))
        self._credentials = credentials
        self._max_attempts = max(1, max_attempts)
        self._sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        self._closed = False

    async def call(self, operation: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """DynamoDB's answer to `operation`, or Refused, or Unreachable."""
        body = encode(payload)
        target = TARGET_PREFIX + operation
        session = self._session()
        failure: Exception | None = None
        for attempt in range(self._max_attempts):
            if attempt:
                await asyncio.sleep(backoff(attempt - 1))
            headers = self._signer.headers(await self._key(), target, body)
            try:
                async with session.post(self._url, data=body, headers=headers) as response:
                    status = response.status
                    data = await response.read()
            except (aiohttp.ClientError, TimeoutError) as e:
                failure = Unreachable(f"{type(e).__name__}: {e}")
                failure.__cause__ = e
                continue
            if status == 200:
                answer: dict[str, Any] = decode(data)
                return answer
            failure = refused(status, data)
            if not retried(failure):
                raise failure
        assert failure is not None
        raise failure

    async def _key(self) -> ReadOnlyCredentials:
        source = self._credentials
        if source is None:
            raise Unreachable("No AWS credentials were found.")
        try:
            if isinstance(source, RefreshableCredentials) and source.refresh_needed():
                # Refreshing asks STS, SSO or the instance: blocking I/O, kept off the loop.
                return await asyncio.to_thread(source.get_frozen_credentials)
            return source.get_frozen_credentials()
        except BotoCoreError as e:  # as boto3's client raised it: the store is unavailable
            raise Unreachable(f"The AWS credentials could not be refreshed: {e}") from e

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None:
            if self._closed:
                raise Unreachable("The DynamoDB client is closed.")
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=CONNECTIONS),
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT
                ),
                skip_auto_headers=("User-Agent",),
            )
            self._sessions[loop] = session
        return session

    async def close(self) -> None:
        """Close this loop's connections, and those of loops still running elsewhere."""
        self._closed = True
        current = asyncio.get_running_loop()
        sessions, self._sessions = self._sessions, {}
        for loop, session in sessions.items():
            if loop is current:
                await session.close()
            elif loop.is_running():
                done = asyncio.run_coroutine_threadsafe(session.close(), loop)
                await asyncio.wait_for(asyncio.wrap_future(done), timeout=5)
            else:  # its loop has ended, and its connections with it: marked closed only
                await session.close()
