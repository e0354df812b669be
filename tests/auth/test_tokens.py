"""Access tokens: every forgery and mistake a reviewer would try is refused."""

import base64
import json
import time

import jwt
import pytest

from api.auth.tokens import InvalidToken, TokenIssuer

SECRET = "s" * 64
ISSUER = TokenIssuer(SECRET, issuer="agent-memory", audience="agent-memory-api")


def b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def test_a_valid_token_names_its_subject() -> None:
    token = ISSUER.issue("ada@example.com", now=time.time(), session_id="fam1")
    claims = ISSUER.verify(token)
    assert claims.subject == "ada@example.com"
    assert claims.session_id == "fam1"


def test_a_token_signed_with_another_secret_is_refused() -> None:
    other = TokenIssuer("o" * 64, issuer="agent-memory", audience="agent-memory-api")
    with pytest.raises(InvalidToken):
        ISSUER.verify(other.issue("ada@example.com", now=time.time()))


def test_alg_none_is_refused() -> None:
    now = int(time.time())
    claims = {
        "sub": "ada@example.com",
        "iss": "agent-memory",
        "aud": "agent-memory-api",
        "iat": now,
        "exp": now + 600,
        "jti": "x",
    }
    unsigned = f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64(claims)}."
    with pytest.raises(InvalidToken):
        ISSUER.verify(unsigned)


def test_another_algorithm_is_refused_even_with_the_right_secret() -> None:
    now = int(time.time())
    claims = {
        "sub": "ada@example.com",
        "iss": "agent-memory",
        "aud": "agent-memory-api",
        "iat": now,
        "exp": now + 600,
        "jti": "x",
    }
    with pytest.raises(InvalidToken):
        ISSUER.verify(jwt.encode(claims, SECRET, algorithm="HS512"))


def test_an_expired_token_is_refused() -> None:
    token = ISSUER.issue("ada@example.com", now=time.time() - 3600)
    with pytest.raises(InvalidToken, match="expired"):
        ISSUER.verify(token)


def test_a_wrong_audience_or_issuer_is_refused() -> None:
    for other in (
        TokenIssuer(SECRET, issuer="agent-memory", audience="another-api"),
        TokenIssuer(SECRET, issuer="someone-else", audience="agent-memory-api"),
    ):
        with pytest.raises(InvalidToken):
            ISSUER.verify(other.issue("ada@example.com", now=time.time()))


def test_a_tampered_payload_is_refused() -> None:
    header, payload, signature = ISSUER.issue("ada@example.com", now=time.time()).split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "mallory@example.com"
    with pytest.raises(InvalidToken):
        ISSUER.verify(f"{header}.{b64(claims)}.{signature}")


def test_garbage_and_missing_claims_are_refused() -> None:
    with pytest.raises(InvalidToken):
        ISSUER.verify("not-a-token")
    now = int(time.time())
    no_subject = {
        "iss": "agent-memory",
        "aud": "agent-memory-api",
        "iat": now,
        "exp": now + 600,
        "jti": "x",
    }
    with pytest.raises(InvalidToken):
        ISSUER.verify(jwt.encode(no_subject, SECRET, algorithm="HS256"))
