"""Credentials at rest: bound to owner and provider, tamper-evident, keys that rotate."""

import pytest

from api.kit.crypto import DecryptionFailed, KeyRing
from api.settings.service import associated_data

OLD = "o" * 40
NEW = "n" * 40
ADA = associated_data("ada@example.com", "openai")


def test_a_round_trip() -> None:
    ring = KeyRing(NEW)
    token = ring.encrypt(b'{"api_key": "sk-live-123"}', ADA)
    assert b"sk-live-123" not in token.encode()
    assert ring.decrypt(token, ADA) == b'{"api_key": "sk-live-123"}'


@pytest.mark.parametrize(
    "elsewhere",
    [associated_data("bob@example.com", "openai"), associated_data("ada@example.com", "anthropic")],
    ids=["another_user", "another_provider"],
)
def test_a_ciphertext_moved_elsewhere_does_not_decrypt(elsewhere: bytes) -> None:
    ring = KeyRing(NEW)
    token = ring.encrypt(b"secret", ADA)
    with pytest.raises(DecryptionFailed):
        ring.decrypt(token, elsewhere)


def test_a_tampered_ciphertext_does_not_decrypt() -> None:
    ring = KeyRing(NEW)
    version, kid, nonce, sealed = ring.encrypt(b"secret", ADA).split(".")
    flipped = sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]
    for bad in (f"{version}.{kid}.{nonce}.{flipped}", "garbage", f"v9.{kid}.{nonce}.{sealed}"):
        with pytest.raises(DecryptionFailed):
            ring.decrypt(bad, ADA)


def test_keys_rotate() -> None:
    before = KeyRing(OLD).encrypt(b"secret", ADA)
    rotated = KeyRing(NEW, [OLD])
    assert rotated.decrypt(before, ADA) == b"secret"  # old ciphertexts still read
    after = rotated.encrypt(b"secret", ADA)
    assert KeyRing.key_id_of(after) == rotated.current_id != KeyRing.key_id_of(before)
    with pytest.raises(DecryptionFailed, match="no longer has"):
        KeyRing(NEW).decrypt(before, ADA)  # once the old key is gone, so are its ciphertexts


def test_short_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="32"):
        KeyRing("short")
