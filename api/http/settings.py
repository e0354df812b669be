"""/settings/providers: a user's LLM provider credentials, and the forms to edit them."""

from typing import Annotated, Any

from fastapi import Body, Request, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from api.http.contract.errors import errors
from api.http.deps.app import ClockDep, ProvidersDep, ReposDep, SettingsDep
from api.http.deps.auth import CurrentUser
from api.http.route_filter import Router
from api.kit.crypto import KeyRing
from api.kit.forms import form_of
from api.llm.errors import PROVIDER_FAILURES
from api.settings import service
from api.settings.providers import PROVIDERS, Credentials
from api.settings.schemas import (
    ProviderForm,
    ProviderSettingsOut,
    ProvidersSchema,
    ProviderTestOut,
)
from api.settings.service import PROVIDER_SETUP

router = Router(prefix="/settings/providers", tags=["settings"])


def _keys(request: Request) -> KeyRing:
    keys: KeyRing = request.state.keyring
    return keys


@router.get("/schema", operation_id="settings_schema")
async def schema() -> ProvidersSchema:
    """The form of every provider, from the models that validate PUT."""
    return ProvidersSchema(
        providers=[
            ProviderForm(
                name=spec.name,
                label=spec.label,
                configurable=spec.credentials is not None,
                fields=form_of(spec.credentials).fields if spec.credentials else [],
            )
            for spec in PROVIDERS.values()
        ]
    )


@router.get("", operation_id="settings_list_providers")
async def list_providers(
    user: CurrentUser, request: Request, repos: ReposDep
) -> list[ProviderSettingsOut]:
    """The providers this user configured, secrets masked."""
    return [
        _out(stored.provider_name, credentials, stored.updated_at)
        for stored, credentials in await service.list_configured(repos, _keys(request), user.email)
    ]


@router.get(
    "/{provider}",
    operation_id="settings_get_provider",
    responses=errors(
        service.UnknownProvider, service.ProviderNotConfigured, service.StoredSettingsInvalid
    ),
)
async def get_provider(
    provider: str, user: CurrentUser, request: Request, repos: ReposDep
) -> ProviderSettingsOut:
    stored, credentials = await service.load_stored(repos, _keys(request), user.email, provider)
    return _out(provider, credentials, stored.updated_at)


@router.put("/{provider}", operation_id="settings_put_provider", responses=errors(*PROVIDER_SETUP))
async def put_provider(
    provider: str,
    body: Annotated[
        dict[str, Any],
        Body(
            description="The fields of the path's provider: its form in GET "
            "/settings/providers/schema, validated by that provider's model (no other fields)."
        ),
    ],
    user: CurrentUser,
    request: Request,
    repos: ReposDep,
    settings: SettingsDep,
    clock: ClockDep,
) -> ProviderSettingsOut:
    """Save credentials. Secret fields left empty keep their stored value."""
    spec = service.spec_of(provider, configurable=True)
    assert spec.credentials is not None
    keys = _keys(request)
    stored = await service.stored_values(repos, keys, user.email, provider, readable_only=True)
    try:
        credentials = spec.credentials.model_validate(
            service.merge_secrets(spec.credentials, body, stored)
        )
    except ValidationError as e:
        raise RequestValidationError(
            [{**error, "loc": ("body", *error["loc"])} for error in e.errors()]
        ) from None
    saved = await service.save(
        repos,
        keys,
        user.email,
        provider,
        credentials,
        allow_private_urls=settings.private_provider_urls,
        allow_server_identity=settings.server_identity_for_users,
        clock=clock,
    )
    return _out(provider, credentials, saved.updated_at)


@router.delete(
    "/{provider}",
    operation_id="settings_delete_provider",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=errors(service.UnknownProvider, service.ProviderNotConfigured),
)
async def delete_provider(provider: str, user: CurrentUser, repos: ReposDep) -> None:
    await service.delete(repos, user.email, provider)


@router.post(
    "/{provider}/test",
    operation_id="settings_test_provider",
    responses=errors(*PROVIDER_SETUP, *PROVIDER_FAILURES),
)
async def test_provider(
    provider: str, user: CurrentUser, repos: ReposDep, providers: ProvidersDep
) -> ProviderTestOut:
    """Lists the provider's models with the stored credentials, or returns its error."""
    llm = await providers.for_user(repos, user.email, provider)
    return ProviderTestOut(ok=True, models=await llm.list_models())


def _out(provider: str, credentials: Credentials, updated_at: Any) -> ProviderSettingsOut:
    return ProviderSettingsOut(
        provider=provider,
        label=PROVIDERS[provider].label,
        values=service.masked(credentials),
        updated_at=updated_at,
    )
