"""Short-lived access tokens: HS256 JWTs whose algorithm, issuer, audience and expiry are
all checked; anything else is refused with the same typed error."""

import uuid
from dataclasses import dataclass

from api.errors import AppError

# PyJWT (and the `cryptography` it loads: about 30 ms and 7 MiB) is imported when a token is
# first issued or checked: a local-mode server never does either.

ALGORITHM = "HS256"  # pinned: the header's `alg` is never trusted
REQUIRED_CLAIMS = ["exp", "iat", "iss", "aud", "sub", "jti"]
ISSUER = "agent-memory"
AUDIENCE = "agent-memory-api"


class InvalidToken(AppError):
    status_code = 401
    code = "invalid_token"


@dataclass(frozen=True)
class AccessClaims:
    subject: str  # the user's email
    token_id: str
    session_id: str | None
    expires_at: int


@dataclass(frozen=True)
class TokenIssuer:
    secret: str
    issuer: str
    audience: str
    lifetime_seconds: int = 900

    def issue(self, subject: str, *, now: float, session_id: str | None = None) -> str:
        claims: dict[str, object] = {
            "sub": subject,
            "iss": self.issuer,
            "aud": self.audience,
            "iat": int(now),
            "exp": int(now) + self.lifetime_seconds,
            "jti": uuid.uuid4().hex,
        }
        if session_id is not None:
            claims["sid"] = session_id
        import jwt

        return jwt.encode(claims, self.secret, algorithm=ALGORITHM)

    def verify(self, token: str) -> AccessClaims:
        import jwt

        try:
            claims = jwt.decode(
                token,
                self.secret,
                algorithms=[ALGORITHM],
                audience=self.audience,
                issuer=self.issuer,
                options={"require": REQUIRED_CLAIMS},
            )
        except jwt.ExpiredSignatureError as e:
            raise InvalidToken("The access token has expired; refresh it.") from e
        except jwt.PyJWTError as e:
            raise InvalidToken("The access token is not valid.") from e
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise InvalidToken("The access token is not valid.")
        session = claims.get("sid")
        return AccessClaims(
            subject=subject,
            token_id=str(claims["jti"]),
            session_id=session if isinstance(session, str) else None,
            expires_at=int(claims["exp"]),
        )


def issuer_for(secret: str, lifetime_minutes: int) -> TokenIssuer:
    """The issuer of a server that signs users in (google mode): PyJWT is loaded now, as
    the app is built, rather than by the first request that carries a token."""
    import jwt  # noqa: F401

    return TokenIssuer(
        secret, issuer=ISSUER, audience=AUDIENCE, lifetime_seconds=lifetime_minutes * 60
    )
