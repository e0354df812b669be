"""/auth: Google sign-in for the SPA, refresh and logout, and API keys for machine clients."""

import logging
from typing import Annotated, Any

from fastapi import Cookie, Depends, Query, Request, Response, status
from fastapi.responses import RedirectResponse
from httpx2 import HTTPError
from joserfc.errors import JoseError

from api.auth import service
from api.auth.oauth import InvalidReturnPath, error_redirect, safe_return_path
from api.auth.schemas import AccessTokenOut, ApiKeyCreate, ApiKeyCreated, ApiKeyOut
from api.errors import AppError
from api.http.contract.errors import errors
from api.http.deps.app import ClockDep, ReposDep, SettingsDep
from api.http.deps.auth import SessionRequired, SessionUser, TokenIssuerDep
from api.http.route_filter import Router
from api.users import service as users

log = logging.getLogger(__name__)

REFRESH_COOKIE = "am_refresh"
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}  # responses holding secrets
REFRESH_PATH = "/auth"

router = Router(prefix="/auth", tags=["auth"])


class CsrfRejected(AppError):
    status_code = 403
    code = "csrf_rejected"


async def same_origin_only(request: Request, settings: SettingsDep) -> None:
    """The refresh cookie authenticates these endpoints, so only the frontend may call them:
    browsers always send Origin on such requests, and a page elsewhere cannot forge it."""
    if request.headers.get("origin") != settings.frontend_origin:
        raise CsrfRejected("This endpoint only answers the frontend's own pages.")


CookieAuthenticated = Depends(same_origin_only)
RefreshCookie = Annotated[str | None, Cookie(alias=REFRESH_COOKIE)]


def _set_refresh_cookie(response: Response, tokens: service.SessionTokens, secure: bool) -> None:
    response.set_cookie(
        REFRESH_COOKIE,
        tokens.refresh_token,
        max_age=tokens.refresh_max_age,
        path=REFRESH_PATH,
        httponly=True,
        secure=secure,
        samesite="strict",
    )


def _clear_refresh_cookie(response: Response, secure: bool) -> None:
    response.delete_cookie(
        REFRESH_COOKIE, path=REFRESH_PATH, httponly=True, secure=secure, samesite="strict"
    )


@router.get(
    "/google/login",
    operation_id="auth_google_login",
    name="google_login",
    responses={302: {"description": "To Google's sign-in page."}, **errors(InvalidReturnPath)},
)
async def google_login(
    request: Request, settings: SettingsDep, return_to: Annotated[str | None, Query()] = None
) -> Any:
    """Starts Google sign-in; `return_to` is where on the frontend to land afterwards."""
    path = safe_return_path(return_to, settings.frontend_origin)
    request.session["return_to"] = path
    # PUBLIC_URL is required in google mode (api/config.py): never the Host a request claims.
    redirect_uri = str(settings.public_url).rstrip("/") + _callback_path(request.app)
    return await request.state.google.authorize_redirect(request, redirect_uri)


def _callback_path(app: Any) -> str:
    """Looked up once per app: a lookup walks every route (8% of a sign-in's CPU)."""
    path: str | None = getattr(app.state, "google_callback_path", None)
    if path is None:
        path = app.state.google_callback_path = str(app.url_path_for("google_callback"))
    return path


@router.get(
    "/google/callback",
    operation_id="auth_google_callback",
    name="google_callback",
    responses={302: {"description": "Back to the frontend, signed in or with `?error=`."}},
)
async def google_callback(
    request: Request,
    repos: ReposDep,
    settings: SettingsDep,
    clock: ClockDep,
    issuer: TokenIssuerDep,
) -> RedirectResponse:
    """Google sends the browser back here: verify, sign the user in, return to the SPA."""
    # authlib is imported in google mode only: it costs local mode's start ~0.4 s.
    from authlib.integrations.base_client.errors import MismatchingStateError, OAuthError

    frontend = str(settings.frontend_url)
    try:
        if request.query_params.get("error"):  # the person declined at Google
            return _failed(request, frontend, "access_denied")
        google = request.state.google
        metadata = await google.load_server_metadata()
        # Without explicit options authlib checks the issuer but not the audience.
        token = await google.authorize_access_token(
            request,
            claims_options={
                "iss": {"essential": True, "values": [metadata["issuer"]]},
                "aud": {"essential": True, "values": [settings.google_client_id]},
            },
        )
        claims = token.get("userinfo") or {}
        await service.remember_nonce(repos, str(claims.get("nonce", "")), clock)
        user = await users.sign_in_with_google(
            repos,
            sub=str(claims["sub"]),
            email=str(claims.get("email", "")),
            email_verified=claims.get("email_verified") is True,
            name=str(claims.get("name", "")),
            picture=claims.get("picture"),
            clock=clock,
        )
        tokens = await service.start_session(
            repos, user.email, issuer, settings.refresh_token_days, clock
        )
    except AppError as e:
        return _failed(request, frontend, e.code)
    except MismatchingStateError:
        return _failed(request, frontend, "invalid_state")
    except JoseError as e:
        log.info("sign-in refused: ID token invalid (%s)", type(e).__name__)
        return _failed(request, frontend, "invalid_id_token")
    except (OAuthError, HTTPError, KeyError) as e:
        log.info("sign-in failed: %s", type(e).__name__)
        return _failed(request, frontend, "sign_in_failed")
    path = request.session.pop("return_to", "/")
    response = RedirectResponse(settings.frontend_origin + path, status_code=302)
    _set_refresh_cookie(response, tokens, settings.cookie_secure)
    return response


def _failed(request: Request, frontend: str, code: str) -> RedirectResponse:
    request.session.clear()
    return RedirectResponse(error_redirect(frontend, code), status_code=302)


@router.post(
    "/refresh",
    operation_id="auth_refresh",
    dependencies=[CookieAuthenticated],
    responses=errors(CsrfRejected, service.InvalidRefreshToken, service.RefreshTokenReused),
)
async def refresh(
    response: Response,
    repos: ReposDep,
    settings: SettingsDep,
    clock: ClockDep,
    issuer: TokenIssuerDep,
    refresh_cookie: RefreshCookie = None,
) -> AccessTokenOut:
    """A fresh access token for the SPA; the refresh cookie rotates with every call."""
    response.headers.update(NO_STORE)
    try:
        tokens = await service.refresh(repos, refresh_cookie, issuer, clock)
    except AppError as e:
        if e.status_code == 401:  # the session is over; a store outage is not a logout
            _clear_refresh_cookie(response, settings.cookie_secure)
        raise
    _set_refresh_cookie(response, tokens, settings.cookie_secure)
    return AccessTokenOut(access_token=tokens.access_token, expires_in=tokens.expires_in)


@router.post(
    "/logout",
    operation_id="auth_logout",
    status_code=status.HTTP_204_NO_CONTENT,
    dependencies=[CookieAuthenticated],
    responses=errors(CsrfRejected),
)
async def logout(
    response: Response,
    repos: ReposDep,
    settings: SettingsDep,
    refresh_cookie: RefreshCookie = None,
) -> None:
    """Ends the session: its refresh tokens and access tokens stop working."""
    await service.end_session(repos, refresh_cookie)
    _clear_refresh_cookie(response, settings.cookie_secure)


@router.post(
    "/api-keys",
    operation_id="auth_create_api_key",
    status_code=status.HTTP_201_CREATED,
    responses=errors(SessionRequired),
)
async def create_api_key(
    user: SessionUser, body: ApiKeyCreate, response: Response, repos: ReposDep, clock: ClockDep
) -> ApiKeyCreated:
    ref, secret = await service.create_api_key(repos, user.email, body.name, clock)
    response.headers.update(NO_STORE)
    return ApiKeyCreated(
        id=ref.key_id, name=ref.name, prefix=ref.prefix, created_at=ref.created_at, key=secret
    )


@router.get("/api-keys", operation_id="auth_list_api_keys", responses=errors(SessionRequired))
async def list_api_keys(user: SessionUser, repos: ReposDep) -> list[ApiKeyOut]:
    return [
        ApiKeyOut(
            id=ref.key_id,
            name=ref.name,
            prefix=ref.prefix,
            created_at=ref.created_at,
            last_used_at=last_used,
        )
        for ref, last_used in await service.list_api_keys(repos, user.email)
    ]


@router.delete(
    "/api-keys/{key_id}",
    operation_id="auth_revoke_api_key",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=errors(SessionRequired, service.ApiKeyNotFound),
)
async def revoke_api_key(user: SessionUser, key_id: str, repos: ReposDep) -> None:
    await service.revoke_api_key(repos, user.email, key_id)
