"""The bridge from an MCP request to our identity: the bearer token (an API key or an
access token) is checked by `current_user`, the very code the REST API runs, and the
caller it names is kept on the request for the tools. Refusals are 401s whose
`WWW-Authenticate` names the protected-resource metadata (RFC 9728), as MCP clients
expect; local mode needs no token (`current_user` answers with the local user)."""

from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from api.config import Settings
from api.errors import AppError
from api.http.deps.auth import current_user
from api.http.errors import app_error
from api.users.models import User

USER_KEY = "agent_memory.mcp_user"  # where the caller waits on the request's scope
METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"


def base_url(settings: Settings, request: Request) -> str:
    """The server's public address: PUBLIC_URL, or the address this request came to
    (its Host was checked against the allowlist before this is read)."""
    return str(settings.public_url or request.base_url).rstrip("/")


def metadata_url(settings: Settings, request: Request) -> str:
    return base_url(settings, request) + METADATA_PATH


def challenge(settings: Settings, request: Request, error: AppError | None) -> str:
    """The `WWW-Authenticate` value: without credentials, only where to learn more (RFC
    6750 §3); with bad ones, why they were refused too."""
    parts = []
    if request.headers.get("authorization"):
        description = error.message.replace('"', "'") if error else "Authentication required"
        parts += ['error="invalid_token"', f'error_description="{description}"']
    parts.append(f'resource_metadata="{metadata_url(settings, request)}"')
    return "Bearer " + ", ".join(parts)


async def authenticate(scope: Scope, receive: Receive, send: Send) -> User | None:
    """The caller, also put on `scope` for the tools; or None once a refusal was sent."""
    request = Request(scope)
    state = request.state
    settings: Settings = state.settings
    try:
        user = await current_user(request, state.repos, settings, state.clock)
    except AppError as e:
        # As REST answers it (status, body, the log line of a server-side failure). Only a
        # 401 challenges: a store that cannot be reached (503 store_unavailable) judged no
        # credentials, and a client told to authenticate again would only try again.
        response = await app_error(request, e)
        if e.status_code == 401:
            response.headers["WWW-Authenticate"] = challenge(settings, request, e)
        await response(scope, receive, send)
        return None
    scope[USER_KEY] = user
    return user


def caller(scope: Scope) -> User:
    """The user `authenticate` found for this request."""
    user: User = scope[USER_KEY]
    return user
