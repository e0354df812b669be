"""Envelope for secrets at rest: AES-256-GCM, the associated data binding each ciphertext to
its owner and purpose, and a key id in every ciphertext so that keys can rotate.

A ciphertext reads `v1.<key id>.<nonce>.<ciphertext+tag>` (base64url). The key id is a
digest of the derived key, never the key. Old keys stay in the ring to decrypt; new writes
always use the current one.
"""

import base64
import binascii
import functools
import hashlib
import os
from collections.abc import Sequence

from api.errors import AppError

# `cryptography` is imported where a key is first derived or used, not at start: about 7 MiB
# and a few ms of every process's cold start, for a server that may never hold a secret.

VERSION = "v1"
MIN_SECRET_LENGTH = 32


class DecryptionFailed(AppError):
    """The ciphertext was altered, moved to another owner, or made with an unknown key."""

    status_code = 500
    code = "decryption_failed"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def derive_key(secret: str) -> bytes:
    """A 256-bit key from a configured secret of any form (HKDF-SHA256)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"agent-memory", info=b"secrets-at-rest/v1"
    ).derive(secret.encode("utf-8"))


def key_id(key: bytes) -> str:
    return hashlib.sha256(b"key-id:" + key).hexdigest()[:12]


class KeyRing:
    """The current key, and the older ones that may still be needed to decrypt."""

    def __init__(self, current: str, older: Sequence[str] = ()) -> None:
        for secret in (current, *older):
            if len(secret) < MIN_SECRET_LENGTH:
                raise ValueError(f"an encryption key needs at least {MIN_SECRET_LENGTH} characters")
        self._secrets = (current, *older)

    @functools.cached_property
    def _keys(self) -> dict[str, bytes]:
        """Derived on first use, by key id, the current key's first."""
        keys = [derive_key(secret) for secret in self._secrets]
        return {key_id(key): key for key in keys}

    @property
    def current_id(self) -> str:
        return next(iter(self._keys))

    @property
    def key_ids(self) -> list[str]:
        return list(self._keys)

    def encrypt(self, plaintext: bytes, associated_data: bytes) -> str:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = os.urandom(12)
        sealed = AESGCM(self._keys[self.current_id]).encrypt(nonce, plaintext, associated_data)
        return ".".join([VERSION, self.current_id, _b64(nonce), _b64(sealed)])

    def decrypt(self, token: str, associated_data: bytes) -> bytes:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            version, kid, nonce, sealed = token.split(".")
            key = self._keys[kid]
            if version != VERSION:
                raise ValueError(version)
            return AESGCM(key).decrypt(_unb64(nonce), _unb64(sealed), associated_data)
        except KeyError as e:
            raise DecryptionFailed(
                "These credentials were encrypted with a key this server no longer has."
            ) from e
        except (ValueError, binascii.Error, InvalidTag) as e:
            raise DecryptionFailed("These credentials cannot be decrypted here.") from e

    @staticmethod
    def key_id_of(token: str) -> str:
        return token.split(".")[1] if token.count(".") == 3 else ""
