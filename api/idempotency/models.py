"""A request sent with an Idempotency-Key, and what its first run answered.

One record per (user, key). It is claimed before the request runs (`running`, until
`until` unless renewed), then holds the answer to replay (`done`), or the run a streamed
turn started (`stream`), for KEEP_SECONDS. The key itself is stored only as a hash: it is
the client's string, up to 255 characters of anything printable, and a hash makes a sort
key of fixed width whatever it holds."""

import hashlib
from typing import Literal

from pydantic import Field

from api.store import keys
from api.store.entity import Entity
from api.store.table import Item, Key

KEEP_SECONDS = 24 * 3600  # how long an answer is replayed
CLAIM_SECONDS = 60  # a claim not renewed for this long is free again (its process died)
RENEW_SECONDS = 20  # how often a running request renews its claim

State = Literal["running", "done", "stream"]


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def fingerprint(method: str, path: str, query: bytes, body: bytes) -> str:
    """What makes two requests the same request. Each part is length-prefixed, so that no
    two different requests run together into the same bytes."""
    digest = hashlib.sha256()
    for part in (method.encode(), path.encode(), query, body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


class IdempotencyRecord(Entity):
    ENTITY = keys.IDEMPOTENCY_RECORD

    email: str
    key_hash: str
    fingerprint: str
    # The claim's owner, made afresh by each claim: only it renews, settles or frees the
    # record, so a request whose claim lapsed and was taken over cannot touch the new one.
    holder: str
    state: State
    until: int | None = None  # running: free to claim again after this (epoch seconds)
    status: int | None = None  # done: the answer
    headers: dict[str, str] = Field(default_factory=dict)
    # Left out of the JSON dump, which would make it text (and fail on bytes that are not
    # UTF-8): to_dynamo_item stores it as bytes, which the table keeps as they are.
    body: bytes = Field(default=b"", exclude=True)
    run_id: str | None = None  # stream: the run a retry re-attaches to
    ttl: int

    def key(self) -> Key:
        return keys.idempotency_record(self.email, self.key_hash)

    def lapsed(self, now: float) -> bool:
        return self.state == "running" and self.until is not None and self.until <= now

    def to_dynamo_item(self) -> Item:
        item = super().to_dynamo_item()
        if self.body:  # an empty body (a 204) is left out
            item["body"] = self.body
        return item
