"""CurrentUser: the one dependency every router uses to know who is calling."""

import asyncio
from typing import Annotated

from fastapi import Depends, Request

from api.auth import service
from api.auth.service import API_KEY_PREFIX, NotAuthenticated
from api.auth.tokens import InvalidToken, TokenIssuer
from api.errors import AppError
from api.http.deps.app import ClockDep, ReposDep, SettingsDep
from api.users.models import User
from api.users.service import LocalIdentity


def token_issuer(request: Request) -> TokenIssuer:
    issuer: TokenIssuer | None = request.state.token_issuer
    if issuer is None:
        raise NotAuthenticated("This server does not issue tokens in local mode.")
    return issuer


async def get_token_issuer(request: Request) -> TokenIssuer:
    return token_issuer(request)


TokenIssuerDep = Annotated[TokenIssuer, Depends(get_token_issuer)]


def _bearer(request: Request) -> str:
    scheme, _, credential = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        raise NotAuthenticated("Sign in, or send an API key as `Authorization: Bearer <key>`.")
    return credential.strip()


async def current_user(
    request: Request, repos: ReposDep, settings: SettingsDep, clock: ClockDep
) -> User:
    if settings.auth_mode == "local":
        local: LocalIdentity = request.state.local
        return await local.user(repos, clock)
    credential = _bearer(request)
    if credential.startswith(API_KEY_PREFIX):
        user = await repos.users.get(await service.email_for_api_key(repos, credential, clock))
    else:
        claims = token_issuer(request).verify(credential)
        if claims.session_id is None:
            raise InvalidToken("The access token is not valid.")
        # The user and their session are independent reads: one round, not two.
        user, live = await asyncio.gather(
            repos.users.get(claims.subject),
            service.session_is_live(repos, claims.session_id),
        )
        if not live:
            raise InvalidToken("This session has ended; sign in again.")
    if user is None:
        raise NotAuthenticated("The account behind these credentials no longer exists.")
    return user


async def caller(request: Request) -> User:
    """current_user with what it needs read from the request's state here rather than as
    three dependencies of its own: each costs FastAPI several microseconds to resolve, on
    nearly every request (docs/performance.md)."""
    state = request.state
    return await current_user(request, state.repos, state.settings, state.clock)


CurrentUser = Annotated[User, Depends(caller)]


class SessionRequired(AppError):
    status_code = 403
    code = "session_required"


async def session_user(request: Request, user: CurrentUser) -> User:
    """The caller, signed in as a person: an API key cannot manage API keys, so a leaked
    key cannot make itself a successor or revoke its owner's other keys."""
    if _bearer(request).startswith(API_KEY_PREFIX):
        raise SessionRequired("Sign in to manage API keys; an API key cannot.")
    return user


SessionUser = Annotated[User, Depends(session_user)]
