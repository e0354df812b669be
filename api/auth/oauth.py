"""Google sign-in with authlib: authorization code with state, nonce and PKCE (S256).

authlib keeps state, nonce and the PKCE verifier in a short-lived signed cookie scoped to
/auth/google, checks `state` on the way back, exchanges the code, and verifies the ID
token against the provider's keys (signature, issuer, audience, expiry, nonce).
"""

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from api.config import Settings
from api.errors import AppError
from api.kit.tls import shared_ssl_context

if TYPE_CHECKING:
    from authlib.integrations.starlette_client import StarletteOAuth2App

SCOPE = "openid email profile"
FLOW_COOKIE = "am_oauth"
FLOW_SECONDS = 600


class InvalidReturnPath(AppError):
    status_code = 400
    code = "invalid_return_path"


def google_client(settings: Settings) -> "StarletteOAuth2App":
    # Imported here, in google mode only: authlib costs local mode's start ~0.4 s.
    from authlib.integrations.starlette_client import OAuth, StarletteOAuth2App

    assert settings.google_client_id
    assert settings.google_client_secret
    oauth = OAuth()
    oauth.register(
        name="google",
        client_id=settings.google_client_id,
        client_secret=settings.google_client_secret.get_secret_value(),
        server_metadata_url=str(settings.google_discovery_url),
        # authlib makes an HTTP client per sign-in: this spares each its own TLS context.
        client_kwargs={
            "scope": SCOPE,
            "code_challenge_method": "S256",
            "verify": shared_ssl_context(),
        },
    )
    client: Any = oauth.create_client("google")  # type: ignore[no-untyped-call]
    assert isinstance(client, StarletteOAuth2App)
    return client


def safe_return_path(value: str | None, frontend_origin: str) -> str:
    """A path on the frontend to land on after sign-in; anything that could lead elsewhere
    (another origin, `//host`, a backslash, a scheme) is refused."""
    if not value:
        return "/"
    if any(ord(c) < 32 for c in value) or "\\" in value:
        raise InvalidReturnPath("The return path is not a path on the frontend.")
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        if f"{parts.scheme}://{parts.netloc}" != frontend_origin:
            raise InvalidReturnPath("The return path must stay on the frontend.")
    elif not value.startswith("/") or value.startswith("//"):
        raise InvalidReturnPath("The return path must start with a single '/'.")
    path = parts.path or "/"
    if not path.startswith("/") or path.startswith("//"):
        raise InvalidReturnPath("The return path must start with a single '/'.")
    return (
        path
        + (f"?{parts.query}" if parts.query else "")
        + (f"#{parts.fragment}" if parts.fragment else "")
    )


def error_redirect(frontend_url: str, code: str) -> str:
    separator = "&" if urlsplit(frontend_url).query else "?"
    return f"{frontend_url}{separator}{urlencode({'auth_error': code})}"
