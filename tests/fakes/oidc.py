"""A fake Google: a small but real OpenID Connect provider, for tests only.

Google sign-in is an outside service the test suite cannot reach, so this stands in for
it. It serves real HTTP on 127.0.0.1 from a background thread, which lets the app's
authlib client run its whole flow unchanged: discovery, authorize redirect with PKCE and
nonce, code exchange, ID token verification against the JWKS, and userinfo.

It implements the authorization code flow only, auto-approves every request as
`FakeGoogle.user`, and checks what a strict provider checks (client credentials,
single-use codes, redirect URI match, PKCE S256), so a client that gets one of those wrong
fails here as it would against Google. Knobs on `FakeGoogle` make it misbehave on purpose,
for tests of the client's own checks (audience, expiry, signature, nonce).

    with start_fake_google() as google:
        oauth.register("google", client_id=google.client_id,
                       client_secret=google.client_secret,
                       server_metadata_url=google.discovery_url, ...)
"""

from __future__ import annotations

import base64
import functools
import hashlib
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from tests.fakes.serving import serve_in_thread

DISCOVERY_PATH = "/.well-known/openid-configuration"
FORM_TYPE = "application/x-www-form-urlencoded"
TOKEN_LIFETIME_SECONDS = 3600
SCOPES_SUPPORTED = ["openid", "email", "profile"]
CLAIMS_SUPPORTED = [
    "aud",
    "email",
    "email_verified",
    "exp",
    "iat",
    "iss",
    "name",
    "picture",
    "sub",
]


def default_user() -> dict[str, Any]:
    return {
        "sub": "1234567890",
        "email": "ada@example.com",
        "email_verified": True,
        "name": "Ada Lovelace",
        "picture": "https://example.com/ada.png",
    }


@functools.cache
def _rsa_key(which: str) -> rsa.RSAPrivateKey:
    """The signing key (or the other one), one per process: making a 2048-bit key takes
    50 ms of CPU, and every fake of the run (one per test) would make two. A fake's own
    `kid` tells its tokens from another fake's."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pkce_challenge(code_verifier: str) -> str:
    """The S256 code_challenge for a verifier (RFC 7636 section 4.2)."""
    return _b64url(hashlib.sha256(code_verifier.encode("ascii")).digest())


@dataclass
class _Grant:
    """What an authorization code stands for, remembered until the code is redeemed."""

    client_id: str
    redirect_uri: str
    nonce: str | None
    code_challenge: str
    scope: str


@dataclass
class FakeGoogle:
    """The running provider's settings, with knobs a test may change between requests.

    Knobs are read on every request, so changing one affects the next ID token issued.
    """

    issuer: str
    client_id: str
    client_secret: str
    discovery_url: str
    user: dict[str, Any] = field(default_factory=default_user)
    # Merged into every ID token after the normal claims; a value of None removes the
    # claim, so a test can also issue a token that lacks, say, its nonce.
    id_token_overrides: dict[str, Any] = field(default_factory=dict)
    # Signs with a key outside the JWKS but keeps the published kid in the header, so the
    # client finds "the right" key and has to catch the forgery by the signature itself.
    sign_with_other_key: bool = False
    replay_nonce: str | None = None
    token_requests: list[dict[str, str]] = field(default_factory=list)

    _kid: str = field(default_factory=lambda: secrets.token_hex(8), init=False, repr=False)
    _key: rsa.RSAPrivateKey = field(
        default_factory=lambda: _rsa_key("signing"), init=False, repr=False
    )
    _other_key: rsa.RSAPrivateKey = field(
        default_factory=lambda: _rsa_key("other"), init=False, repr=False
    )
    _grants: dict[str, _Grant] = field(default_factory=dict, init=False, repr=False)
    # Redeemed code -> the access token it bought, so a replayed code can revoke it.
    _redeemed: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    _access_tokens: dict[str, float] = field(default_factory=dict, init=False, repr=False)

    @property
    def authorization_endpoint(self) -> str:
        return self.issuer + "/authorize"

    @property
    def token_endpoint(self) -> str:
        return self.issuer + "/token"

    @property
    def jwks_uri(self) -> str:
        return self.issuer + "/jwks"

    @property
    def userinfo_endpoint(self) -> str:
        return self.issuer + "/userinfo"

    def jwks(self) -> dict[str, Any]:
        jwk: dict[str, Any] = RSAAlgorithm.to_jwk(self._key.public_key(), as_dict=True)
        jwk.update(kid=self._kid, use="sig", alg="RS256")
        return {"keys": [jwk]}

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": self.authorization_endpoint,
            "token_endpoint": self.token_endpoint,
            "jwks_uri": self.jwks_uri,
            "userinfo_endpoint": self.userinfo_endpoint,
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": SCOPES_SUPPORTED,
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
            "code_challenge_methods_supported": ["S256"],
            "grant_types_supported": ["authorization_code"],
            "claims_supported": CLAIMS_SUPPORTED,
        }

    def issue_id_token(self, nonce: str | None, access_token: str) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.client_id,
            "azp": self.client_id,
            **self.user,
            "iat": now,
            "exp": now + TOKEN_LIFETIME_SECONDS,
            # Left half of SHA-256 of the access token (OIDC Core 3.1.3.6), as Google sends.
            "at_hash": _b64url(hashlib.sha256(access_token.encode("ascii")).digest()[:16]),
        }
        if self.replay_nonce is not None:
            nonce = self.replay_nonce
        if nonce is not None:
            claims["nonce"] = nonce
        for name, value in self.id_token_overrides.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        # Google sets azp to the client the token was minted for, so an overridden aud
        # models a token issued to another client unless the test pins azp itself.
        if "azp" not in self.id_token_overrides and isinstance(claims.get("aud"), str):
            claims["azp"] = claims["aud"]
        key = self._other_key if self.sign_with_other_key else self._key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self._kid})


def _oauth_error(
    error: str, description: str, status: int = 400, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": error, "error_description": description},
        status_code=status,
        headers={"Cache-Control": "no-store", **(headers or {})},
    )


def _basic_credentials(header: str) -> tuple[str, str] | None:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
    except ValueError:
        return None
    client_id, sep, client_secret = decoded.partition(":")
    return (client_id, client_secret) if sep else None


def _build_app(google: FakeGoogle) -> Starlette:
    async def discovery(request: Request) -> Response:
        return JSONResponse(google.discovery())

    async def jwks(request: Request) -> Response:
        return JSONResponse(google.jwks())

    async def authorize(request: Request) -> Response:
        query = request.query_params
        # Every failure is a 400 here rather than an error redirect: a bad request should
        # stop a test loudly, not come back to the app as a callback to misread.
        if query.get("client_id") != google.client_id:
            return _oauth_error("invalid_client", "unknown client_id")
        redirect_uri = query.get("redirect_uri")
        if not redirect_uri:
            return _oauth_error("invalid_request", "redirect_uri is required")
        if query.get("response_type") != "code":
            return _oauth_error("unsupported_response_type", "only response_type=code")
        scope = query.get("scope", "")
        if "openid" not in scope.split():
            return _oauth_error("invalid_scope", "scope must include openid")
        state = query.get("state")
        if not state:
            return _oauth_error("invalid_request", "state is required")
        code_challenge = query.get("code_challenge")
        if not code_challenge or query.get("code_challenge_method") != "S256":
            return _oauth_error("invalid_request", "PKCE with code_challenge_method=S256 required")

        code = secrets.token_urlsafe(32)
        google._grants[code] = _Grant(
            client_id=google.client_id,
            redirect_uri=redirect_uri,
            nonce=query.get("nonce"),
            code_challenge=code_challenge,
            scope=scope,
        )
        separator = "&" if "?" in redirect_uri else "?"
        location = redirect_uri + separator + urlencode({"code": code, "state": state})
        return RedirectResponse(location, status_code=302)

    async def token(request: Request) -> Response:
        # Parsed by hand because Starlette's request.form() needs python-multipart, which
        # the project does not install.
        if request.headers.get("content-type", "").split(";")[0].strip() != FORM_TYPE:
            return _oauth_error("invalid_request", f"body must be {FORM_TYPE}")
        pairs = parse_qsl((await request.body()).decode("utf-8"), keep_blank_values=True)
        form = dict(pairs)
        google.token_requests.append(form)
        if len(form) != len(pairs):
            return _oauth_error("invalid_request", "repeated parameter")

        header = request.headers.get("authorization")
        if header is not None and ("client_secret" in form):
            return _oauth_error("invalid_request", "use one client authentication method")
        if header is not None:
            credentials = _basic_credentials(header)
            # A client_id in the body must then agree with the authenticated one.
            if credentials is not None and form.get("client_id", credentials[0]) != credentials[0]:
                credentials = None
        else:
            credentials = (form.get("client_id", ""), form.get("client_secret", ""))
        expected = (google.client_id, google.client_secret)
        # RFC 6749 says Basic credentials are form-encoded first but authlib sends them raw,
        # so both spellings are accepted.
        if credentials is None or (
            credentials != expected and tuple(map(unquote, credentials)) != expected
        ):
            return _oauth_error(
                "invalid_client",
                "client authentication failed",
                status=401,
                # RFC 6749 section 5.2 requires the challenge when Basic was tried.
                headers={"WWW-Authenticate": 'Basic realm="fake-google"'} if header else None,
            )

        if form.get("grant_type") != "authorization_code":
            return _oauth_error("unsupported_grant_type", "only authorization_code")
        code = form.get("code", "")
        # Popped before any further check: a code is spent by being presented, so a
        # failed attempt cannot be retried with a guessed verifier.
        grant = google._grants.pop(code, None)
        if grant is None:
            # RFC 6749 section 4.1.2: a replayed code should revoke what it already bought.
            spent_access_token = google._redeemed.get(code)
            if spent_access_token is not None:
                google._access_tokens.pop(spent_access_token, None)
            return _oauth_error("invalid_grant", "unknown, expired or already used code")
        if grant.client_id != google.client_id:
            return _oauth_error("invalid_grant", "code was issued to another client")
        if form.get("redirect_uri") != grant.redirect_uri:
            return _oauth_error("invalid_grant", "redirect_uri does not match")
        verifier = form.get("code_verifier", "")
        if not verifier or not secrets.compare_digest(
            pkce_challenge(verifier), grant.code_challenge
        ):
            return _oauth_error("invalid_grant", "code_verifier does not match")

        access_token = secrets.token_urlsafe(32)
        google._access_tokens[access_token] = time.time() + TOKEN_LIFETIME_SECONDS
        google._redeemed[code] = access_token
        return JSONResponse(
            {
                "access_token": access_token,
                "token_type": "Bearer",
                "expires_in": TOKEN_LIFETIME_SECONDS,
                "id_token": google.issue_id_token(grant.nonce, access_token),
                "scope": grant.scope,
            },
            headers={"Cache-Control": "no-store", "Pragma": "no-cache"},
        )

    async def userinfo(request: Request) -> Response:
        scheme, _, access_token = request.headers.get("authorization", "").partition(" ")
        expires_at = google._access_tokens.get(access_token)
        if scheme.lower() != "bearer" or expires_at is None or expires_at < time.time():
            return Response(
                status_code=401, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'}
            )
        return JSONResponse(dict(google.user))

    return Starlette(
        routes=[
            Route(DISCOVERY_PATH, discovery),
            Route("/authorize", authorize),
            Route("/token", token, methods=["POST"]),
            Route("/jwks", jwks),
            Route("/userinfo", userinfo),
        ]
    )


@contextmanager
def start_fake_google(
    client_id: str = "test-client",
    client_secret: str = "test-secret-fake-google",  # noqa: S107 - a fake's fixed test value
) -> Iterator[FakeGoogle]:
    """Run a fake Google on a free port of 127.0.0.1 for the duration of the block.

    Works as `with start_fake_google() as google:` or, in a fixture, `yield` from inside
    that block. Returns only once the discovery document answers over HTTP.
    """

    def build(issuer: str) -> tuple[FakeGoogle, ASGIApp]:
        google = FakeGoogle(
            issuer=issuer,
            client_id=client_id,
            client_secret=client_secret,
            discovery_url=issuer + DISCOVERY_PATH,
        )
        return google, _build_app(google)

    with serve_in_thread("fake-google", build, DISCOVERY_PATH) as google:
        yield google
