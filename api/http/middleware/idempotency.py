"""Idempotency-Key on POST, PUT, PATCH and DELETE (the IETF draft "The Idempotency-Key HTTP
Header Field"): a request retried with the key it was first sent with gets the first answer
again, and its work is not done twice.

The first request claims (user, key) with a conditional write, runs, and leaves its answer
in the record for a day; a retry finds the record and replays it. A claim is renewed while
its request runs, so a process that dies mid-request frees the key CLAIM_SECONDS later.
Streamed turns are not buffered: their record names the run, and a retry re-attaches to it
through the `resume` hook. See docs/idempotency.md.

Plain ASGI, like RequestLimits, because it must see the whole answer (status, headers and
body) as it leaves, and hold it back until it is stored."""

import asyncio
import logging
import math
import uuid
from collections.abc import Awaitable, Callable
from typing import Literal

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.errors import AppError
from api.http import errors as error_handlers
from api.http.deps.auth import current_user
from api.idempotency.errors import (
    MAX_KEY_LENGTH,
    IdempotencyKeyReused,
    InvalidIdempotencyKey,
    RequestInProgress,
)
from api.idempotency.models import (
    CLAIM_SECONDS,
    KEEP_SECONDS,
    RENEW_SECONDS,
    IdempotencyRecord,
    fingerprint,
    key_hash,
)
from api.kit.clock import Clock
from api.repositories import Repositories
from api.store.table import StoreError

log = logging.getLogger(__name__)

METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
HEADER = b"idempotency-key"
REPLAYED = "Idempotent-Replayed"
RUN_ID = "run-id"  # the run a turn route started (api/runtime/sse.py)
# Sign-in, refresh and logout set and rotate cookies and refresh tokens: replaying one of
# those answers would hand out a token that was already rotated away, or undo a logout.
# An import is idempotent by its content, and its body (up to MAX_IMPORT_BYTES) is streamed
# to disk: holding it in memory for a fingerprint would undo that.
PASSED_THROUGH = ("/auth/", "/agents/import")
# An item holds 400 KB at most; the rest is left for the headers and the record itself.
MAX_STORED_BODY_BYTES = 300 * 1024
# Never set-cookie. Run-Id: a turn answered as JSON names its run (GET /runs/{id}) too.
# Undo-Until: until when a deleted archival memory can be restored.
KEPT_HEADERS = ("content-type", "etag", "location", "retry-after", RUN_ID, "undo-until")
# Answers a retry should not get again: they say "not now", not "no".
TRANSIENT = frozenset({408, 409, 412, 425, 429})

# resume(scope, email, run_id): the answer that re-attaches a retry to a streamed turn.
Resume = Callable[[Scope, str, str], Awaitable[Response]]


def kept(status: int) -> bool:
    """Whether an answer is stored for retries: successes and final refusals."""
    return 200 <= status < 300 or (400 <= status < 500 and status not in TRANSIENT)


def parse_key(values: list[bytes]) -> str:
    """The key of the one Idempotency-Key header. The draft makes it an sf-string, which
    clients send quoted or not: `"abc"` and `abc` are the same key."""
    if len(values) != 1:
        raise InvalidIdempotencyKey("Send one Idempotency-Key header, not several.")
    key = values[0].decode("latin-1").strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not all(" " <= c <= "~" for c in key):
        raise InvalidIdempotencyKey()
    return key


class Idempotency:
    def __init__(
        self,
        app: ASGIApp,
        *,
        resume: Resume | None,
        claim_seconds: int = CLAIM_SECONDS,
        renew_seconds: float = RENEW_SECONDS,
        max_stored_body_bytes: int = MAX_STORED_BODY_BYTES,
    ) -> None:
        self.app = app
        self.resume = resume
        self.claim_seconds = claim_seconds
        self.renew_seconds = renew_seconds
        self.max_stored_body_bytes = max_stored_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in METHODS
            or scope["path"].startswith(PASSED_THROUGH)
        ):
            await self.app(scope, receive, send)
            return
        sent = [value for name, value in scope["headers"] if name == HEADER]
        if not sent or not _routed(scope):
            await self.app(scope, receive, send)
            return
        try:
            key = parse_key(sent)
        except InvalidIdempotencyKey as e:
            await _answer(scope, receive, send, e)
            return
        state = scope["state"]
        repos: Repositories = state["repos"]
        clock: Clock = state["clock"]
        request = Request(scope, receive)
        # The record belongs to the caller, and a middleware runs before the route and its
        # dependencies: so the caller is resolved here too, the same way (no read in local
        # mode, one concurrent round for a token), only for requests that carry a key.
        try:
            user = await current_user(request, repos, state["settings"], clock)
        except AppError as e:
            if e.status_code >= 500:  # the store is failing: nothing can be claimed
                await _answer(scope, receive, send, e)
            else:  # not signed in: the app answers 401 as it always does
                await self.app(scope, receive, send)
            return
        try:
            body = await _read_body(receive)
        except HTTPException as e:  # over MAX_REQUEST_BYTES, as RequestLimits counted
            await (await error_handlers.http_error(request, e))(scope, receive, send)
            return
        if body is None:  # the client left before it had sent the whole body
            return
        replay = _replaying(body, receive)
        now = clock.now()
        record = IdempotencyRecord(
            email=user.email,
            key_hash=key_hash(key),
            fingerprint=fingerprint(scope["method"], scope["path"], scope["query_string"], body),
            holder=uuid.uuid4().hex,
            state="running",
            until=math.ceil(now + self.claim_seconds),
            ttl=math.ceil(now + KEEP_SECONDS),
        )
        try:
            first = await _claim(repos, record, now)
        except AppError as e:
            await _answer(scope, replay, send, e)
            return
        if first is None:
            await Attempt(self, repos, clock, record, send).run(scope, replay)
        elif first.state == "done":
            await _stored_answer(first)(scope, replay, send)
        else:
            await self._resume(scope, replay, send, first)

    async def _resume(
        self, scope: Scope, receive: Receive, send: Send, first: IdempotencyRecord
    ) -> None:
        """A retry of a streamed turn: the run's events, through the hook."""
        assert first.run_id is not None
        if self.resume is None:
            message = (
                f"The first request sent with this Idempotency-Key started run {first.run_id}, "
                "whose events this server cannot send again yet."
            )
            await _answer(scope, receive, send, RequestInProgress(message))
            return
        try:
            response = await self.resume(scope, first.email, first.run_id)
        except AppError as e:
            await _answer(scope, receive, send, e)
            return
        response.headers[REPLAYED] = "true"
        await response(scope, receive, send)


async def _claim(
    repos: Repositories, record: IdempotencyRecord, now: float
) -> IdempotencyRecord | None:
    """None when the key is now this request's; otherwise the finished first request
    (`done` or `stream`) to answer from. Raises when the key belongs to another request,
    or to one still running."""
    if await repos.idempotency.claim(record):
        return None
    first = await repos.idempotency.get(record.email, record.key_hash)
    if first is None:  # freed a moment ago (the first failed): the retry may run shortly
        raise RequestInProgress()
    if first.fingerprint != record.fingerprint:
        raise IdempotencyKeyReused()
    if first.state != "running":
        return first
    if first.lapsed(now) and await repos.idempotency.take_over(record, first):
        log.warning("took over an Idempotency-Key whose request stopped renewing its claim")
        return None
    raise RequestInProgress()


class Attempt:
    """One run of a claimed request. It watches the answer leave through `send` and settles
    the claim as soon as the answer allows, before the client sees it: a client that got
    an answer finds it stored, or finds the key free if the answer is not kept."""

    def __init__(
        self,
        owner: Idempotency,
        repos: Repositories,
        clock: Clock,
        record: IdempotencyRecord,
        send: Send,
    ) -> None:
        self.owner = owner
        self.repos = repos
        self.clock = clock
        self.record = record
        self.downstream = send
        self.settled = False
        self.mode: Literal["buffer", "pass"] = "pass"
        self.start: Message | None = None
        self.chunks: list[bytes] = []
        self.size = 0
        self.renewing: asyncio.Task[None] | None = None

    async def run(self, scope: Scope, receive: Receive) -> None:
        self.renewing = asyncio.create_task(self._renew())
        try:
            await self.owner.app(scope, receive, self.send)
        finally:
            # Failed before it answered, raised, or streamed without a run to name: a retry
            # must be able to run it again.
            if not self.settled:
                await self._release()
            self.renewing.cancel()

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            await self._started(message)
        elif message["type"] == "http.response.body" and self.mode == "buffer":
            await self._buffered(message)
        else:
            await self.downstream(message)

    async def _started(self, message: Message) -> None:
        status: int = message["status"]
        headers = Headers(raw=message["headers"])
        if headers.get("content-type", "").startswith("text/event-stream"):
            # Never buffered. With a run id a retry re-attaches to the run; without one the
            # stream cannot be given again, and the claim is freed when it ends.
            run_id = headers.get(RUN_ID)
            if run_id and 200 <= status < 300:
                await self._settle(state="stream", run_id=run_id)
        elif not kept(status):
            await self._release()
        else:
            self.mode = "buffer"
            self.start = message
            return
        await self.downstream(message)

    async def _buffered(self, message: Message) -> None:
        assert self.start is not None
        self.chunks.append(message.get("body", b""))
        self.size += len(self.chunks[-1])
        more: bool = message.get("more_body", False)
        if self.size > self.owner.max_stored_body_bytes:
            # Too big to keep: the key is freed, and the answer leaves as it comes.
            self.mode = "pass"
            await self._release()
            await self.downstream(self.start)
            body = b"".join(self.chunks)
            await self.downstream({"type": "http.response.body", "body": body, "more_body": more})
            self.chunks = []
            return
        if more:
            return
        body = b"".join(self.chunks)
        status: int = self.start["status"]
        headers = Headers(raw=self.start["headers"])
        stored = {name: headers[name] for name in KEPT_HEADERS if name in headers}
        await self._settle(state="done", status=status, headers=stored, body=body)
        await self.downstream(self.start)
        await self.downstream({"type": "http.response.body", "body": body, "more_body": False})

    async def _settle(self, **outcome: object) -> None:
        self._stop_renewing()
        ttl = math.ceil(self.clock.now() + KEEP_SECONDS)
        settled = self.record.model_copy(update={**outcome, "until": None, "ttl": ttl})
        try:
            if not await self.repos.idempotency.settle(settled):
                log.warning("an Idempotency-Key was taken over before its answer was stored")
        except StoreError as e:
            log.warning("storing the answer to an Idempotency-Key failed: %s", e)
            await self._release()
        self.settled = True

    async def _release(self) -> None:
        self._stop_renewing()
        self.settled = True
        try:
            await self.repos.idempotency.release(self.record)
        except StoreError as e:  # it frees itself CLAIM_SECONDS after its last renewal
            log.warning("freeing an Idempotency-Key failed: %s", e)

    def _stop_renewing(self) -> None:
        if self.renewing is not None:
            self.renewing.cancel()

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.owner.renew_seconds)
            until = math.ceil(self.clock.now() + self.owner.claim_seconds)
            try:
                if not await self.repos.idempotency.renew(self.record, until):
                    log.warning("lost the claim on an Idempotency-Key: its request ran unrenewed")
                    return
            except StoreError as e:  # the claim holds until its `until`: try again next time
                log.warning("renewing the claim on an Idempotency-Key failed: %s", e)


def _routed(scope: Scope) -> bool:
    """Whether a route takes this method at this path. A request no route takes gets the
    app's 404 or 405, which no key changes: a key reused on it must not turn that into a
    422, nor may a record be kept for it."""
    app = scope.get("app")
    routes = getattr(getattr(app, "router", None), "routes", None)
    if routes is None:  # not under a Starlette app: leave the answer to what follows
        return True
    return any(route.matches(scope)[0] is Match.FULL for route in routes)


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body (RequestLimits bounds it), or None if the client left first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """The body, read already, for the app; then whatever the client says next (that it
    left, typically)."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _stored_answer(record: IdempotencyRecord) -> Response:
    assert record.status is not None
    headers = {**record.headers, REPLAYED: "true"}
    return Response(record.body, status_code=record.status, headers=headers)


async def _answer(scope: Scope, receive: Receive, send: Send, error: AppError) -> None:
    response = await error_handlers.app_error(Request(scope, receive), error)
    await response(scope, receive, send)
