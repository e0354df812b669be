"""Random identifiers and secrets, and the one-way hash under which secrets are stored."""

import hashlib
import hmac
import secrets
import uuid


def new_id() -> str:
    return uuid.uuid4().hex


def new_secret(prefix: str) -> str:
    """A bearer secret: a recognisable prefix and 256 random bits."""
    return f"{prefix}{secrets.token_urlsafe(32)}"


def digest(secret: str) -> str:
    """SHA-256 hex of a high-entropy secret. Salting adds nothing for 256 random bits, and
    the digest must be deterministic to serve as the lookup key."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def derived_key(secret: str, purpose: str) -> str:
    """A key for one purpose, derived from a shared secret, so that no two uses share a key."""
    return hmac.new(secret.encode("utf-8"), purpose.encode("utf-8"), hashlib.sha256).hexdigest()
