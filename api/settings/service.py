"""A user's LLM providers: credentials validated, their URL checked, encrypted at rest bound
to their owner and provider, shown masked, and turned into a provider adapter on demand."""

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import SecretStr, ValidationError

from api.config import Settings
from api.errors import AppError, NotFound
from api.kit import netguard
from api.kit.clock import Clock
from api.kit.crypto import DecryptionFailed, KeyRing
from api.llm.types import LLMProvider
from api.repositories import Repositories
from api.settings.models import ProviderSettings
from api.settings.providers import PROVIDERS, Credentials, ProviderSpec
from api.store.table import ConditionFailed


class UnknownProvider(NotFound):
    code = "unknown_provider"


class ProviderNotConfigured(NotFound):
    code = "provider_not_configured"


class StoredSettingsInvalid(AppError):
    status_code = 409
    code = "stored_settings_invalid"


class ServerIdentityRefused(AppError):
    status_code = 400
    code = "credentials_required"


# Getting a user's provider ready: not configured, stored settings unreadable, a URL refused.
PROVIDER_SETUP = (
    UnknownProvider,
    ProviderNotConfigured,
    StoredSettingsInvalid,
    ServerIdentityRefused,
    netguard.UrlRefused,
)


def spec_of(provider: str, *, configurable: bool = False) -> ProviderSpec:
    spec = PROVIDERS.get(provider)
    if spec is None or (configurable and spec.credentials is None):
        known = ", ".join(n for n, s in PROVIDERS.items() if s.credentials or not configurable)
        raise UnknownProvider(f"There is no provider {provider!r} to configure; try: {known}.")
    return spec


def associated_data(email: str, provider: str) -> bytes:
    """Binds a ciphertext to its owner and provider: copied elsewhere, it will not decrypt."""
    return f"agent-memory/provider-credentials/{email}/{provider}".encode()


def secret_fields(model: type[Credentials]) -> set[str]:
    return {
        name
        for name, field in model.model_fields.items()
        if field.annotation in (SecretStr, SecretStr | None)
    }


def reveal(credentials: Credentials) -> dict[str, Any]:
    """Every value in clear, JSON-ready: only ever encrypted, never returned or logged."""
    return {
        name: value.get_secret_value()
        if isinstance(value, SecretStr)
        else (
            str(value)
            if value is not None and not isinstance(value, str | int | float | bool)
            else value
        )
        for name, value in credentials
    }


def mask(secret: str) -> str:
    """Enough to tell two keys apart, too little to matter: the last 4 of a long secret."""
    return f"…{secret[-4:]}" if len(secret) >= 20 else "••••"


def masked(credentials: Credentials) -> dict[str, Any]:
    secrets = secret_fields(type(credentials))
    return {
        name: (mask(value) if name in secrets and value is not None else value)
        for name, value in reveal(credentials).items()
    }


def _decrypt(keys: KeyRing, settings: ProviderSettings) -> dict[str, Any]:
    data = associated_data(settings.user_email, settings.provider_name)
    values: dict[str, Any] = json.loads(keys.decrypt(settings.encrypted_credentials, data))
    return values


def credentials_of(keys: KeyRing, settings: ProviderSettings) -> Credentials:
    """The stored credentials, decrypted and validated by their provider's model."""
    spec = spec_of(settings.provider_name, configurable=True)
    assert spec.credentials is not None
    try:
        return spec.credentials.model_validate(_decrypt(keys, settings))
    except ValidationError:  # saved under older rules; the values stay out of the error
        raise StoredSettingsInvalid(
            f"The saved {spec.label} settings no longer fit; save them again."
        ) from None


async def stored_values(
    repos: Repositories, keys: KeyRing, email: str, provider: str, *, readable_only: bool = False
) -> dict[str, Any] | None:
    """The stored values in clear. With `readable_only`, values that no longer decrypt
    (their key was dropped) count as none, so that saving new ones still works."""
    settings = await repos.provider_settings.get(email, provider)
    if settings is None:
        return None
    try:
        return _decrypt(keys, settings)
    except DecryptionFailed:
        if readable_only:
            return None
        raise


async def load_stored(
    repos: Repositories, keys: KeyRing, email: str, provider: str
) -> tuple[ProviderSettings, Credentials]:
    """The stored item and its credentials, from one read."""
    spec = spec_of(provider, configurable=True)
    settings = await repos.provider_settings.get(email, provider)
    if settings is None:
        raise ProviderNotConfigured(f"{spec.label} is not configured yet.")
    return settings, credentials_of(keys, settings)


async def load(repos: Repositories, keys: KeyRing, email: str, provider: str) -> Credentials:
    return (await load_stored(repos, keys, email, provider))[1]


async def list_configured(
    repos: Repositories, keys: KeyRing, email: str
) -> list[tuple[ProviderSettings, Credentials]]:
    """Every provider this user configured, from one query."""
    return [(s, credentials_of(keys, s)) for s in await repos.provider_settings.list_for(email)]


def merge_secrets(
    model: type[Credentials], submitted: dict[str, Any], stored: dict[str, Any] | None
) -> dict[str, Any]:
    """Secret fields left empty in a form keep their stored value: a form never shows
    secrets, so it cannot send them back."""
    merged = dict(submitted)
    for name in secret_fields(model):
        owner = model.SECRET_BELONGS_TO.get(name)
        if owner is not None and stored and merged.get(owner) != stored.get(owner):
            continue
        if merged.get(name) in (None, "") and stored and stored.get(name) is not None:
            merged[name] = stored[name]
    return merged


async def save(
    repos: Repositories,
    keys: KeyRing,
    email: str,
    provider: str,
    credentials: Credentials,
    *,
    allow_private_urls: bool,
    allow_server_identity: bool,
    clock: Clock,
) -> ProviderSettings:
    if credentials.uses_server_identity() and not allow_server_identity:
        raise ServerIdentityRefused("Give your own credentials; this server lends none.")
    url = credentials.url()
    if url:
        await netguard.check_url(url, allow_private=allow_private_urls)
    plaintext = json.dumps(reveal(credentials)).encode()
    settings = ProviderSettings(
        user_email=email,
        provider_name=provider,
        encrypted_credentials=keys.encrypt(plaintext, associated_data(email, provider)),
        key_id=keys.current_id,
        updated_at=datetime.fromtimestamp(clock.now(), tz=UTC),
    )
    await repos.provider_settings.save(settings)
    return settings


async def delete(repos: Repositories, email: str, provider: str) -> None:
    spec = spec_of(provider, configurable=True)
    if await repos.provider_settings.get(email, provider) is None:
        raise ProviderNotConfigured(f"{spec.label} is not configured.")
    await repos.provider_settings.delete(email, provider)


CLOSE_AFTER_SECONDS = 600.0  # longer than any turn's LLM calls
ProviderKey = tuple[str, str, str]  # owner, provider, the credentials' ciphertext's hash
Built = tuple[LLMProvider, str | None]  # the adapter, and the base URL the user chose


class ProviderCache:
    """Adapters already built, by owner, provider and the ciphertext they came from: new
    credentials build a new client, and a turn does not pay for building one (an SDK client
    reads files and makes a TLS context as it is made). Turns that miss together share one
    build: a cold worker's first burst of turns would otherwise build (and import the SDK
    for) one client each, filling the default executor that searches and the embedder
    need too."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._tasks: set[asyncio.Task[None]] = set()
        self._built: OrderedDict[ProviderKey, Built] = OrderedDict()
        self._building: dict[ProviderKey, asyncio.Future[Built]] = {}

    def get(self, key: ProviderKey) -> Built | None:
        found = self._built.get(key)
        if found is not None:
            self._built.move_to_end(key)
        return found

    async def get_or_build(self, key: ProviderKey, build: Callable[[], Built]) -> Built:
        """The adapter kept for `key`, or the one `build` makes (off the loop: SDK clients
        read files and environment as they are made), shared with every caller that asks
        for it meanwhile. A caller that gives up does not stop the build for the others."""
        found = self.get(key)
        if found is not None:
            return found
        building = self._building.get(key)
        if building is None:
            building = asyncio.ensure_future(self._build(key, build))
            self._building[key] = building
            # Read here in case every caller gave up before it ended.
            building.add_done_callback(lambda f: f.cancelled() or f.exception())
        return await asyncio.shield(building)

    async def _build(self, key: ProviderKey, build: Callable[[], Built]) -> Built:
        try:
            built = await asyncio.to_thread(build)
        finally:
            del self._building[key]
        self._built[key] = built
        while len(self._built) > self.size:
            _, (dropped, _) = self._built.popitem(last=False)
            # Closed once the turns still using it have had time to end.
            asyncio.get_running_loop().call_later(CLOSE_AFTER_SECONDS, self._close, dropped)
        return built

    def _close(self, adapter: LLMProvider) -> None:
        task = asyncio.ensure_future(adapter.aclose())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        """Close every adapter still cached, at shutdown (those being built, once built)."""
        await asyncio.gather(*self._building.values(), return_exceptions=True)
        adapters = [adapter for adapter, _ in self._built.values()]
        self._built.clear()
        await asyncio.gather(*(a.aclose() for a in adapters), *self._tasks, return_exceptions=True)


class ProviderFactory:
    """The adapters of users' providers, built with this server's policy (private URLs,
    lent server identity) and kept in one cache: one per app, made at start-up and handed
    to whatever calls a user's model (turns, memory runs, the agents form, the settings
    test), so that all of them share the clients built."""

    def __init__(self, keyring: KeyRing, settings: Settings) -> None:
        self.keyring = keyring
        self.allow_private_urls = settings.private_provider_urls
        self.allow_server_identity = settings.server_identity_for_users
        self.cache = ProviderCache()

    async def for_user(self, repos: Repositories, email: str, provider: str) -> LLMProvider:
        """The adapter for this user's provider, with their stored credentials."""
        return await provider_for(
            repos,
            self.keyring,
            email,
            provider,
            allow_private_urls=self.allow_private_urls,
            allow_server_identity=self.allow_server_identity,
            cache=self.cache,
        )

    async def from_stored(self, stored: ProviderSettings | None, provider: str) -> LLMProvider:
        """The adapter from settings the caller read already (alongside other reads)."""
        return await provider_from(
            self.keyring,
            stored,
            provider,
            allow_private_urls=self.allow_private_urls,
            allow_server_identity=self.allow_server_identity,
            cache=self.cache,
        )

    async def aclose(self) -> None:
        await self.cache.aclose()


async def provider_for(
    repos: Repositories,
    keys: KeyRing,
    email: str,
    provider: str,
    *,
    allow_private_urls: bool,
    allow_server_identity: bool,
    cache: ProviderCache | None = None,
) -> LLMProvider:
    """The adapter for this user's provider, with their credentials."""
    stored = (
        await repos.provider_settings.get(email, provider)
        if spec_of(provider).credentials
        else None
    )
    return await provider_from(
        keys,
        stored,
        provider,
        allow_private_urls=allow_private_urls,
        allow_server_identity=allow_server_identity,
        cache=cache,
    )


async def provider_from(
    keys: KeyRing,
    stored: ProviderSettings | None,
    provider: str,
    *,
    allow_private_urls: bool,
    allow_server_identity: bool,
    cache: ProviderCache | None = None,
) -> LLMProvider:
    """The adapter for a provider from its stored settings (read by the caller, perhaps
    alongside other reads)."""
    spec = spec_of(provider)
    if spec.credentials is None:
        return spec.build(None)
    if stored is None:
        raise ProviderNotConfigured(f"{spec.label} is not configured yet.")
    key = (
        stored.user_email,
        provider,
        hashlib.sha256(stored.encrypted_credentials.encode()).hexdigest(),
    )
    built = cache.get(key) if cache else None
    if built is None:
        credentials = credentials_of(keys, stored)
        if credentials.uses_server_identity() and not allow_server_identity:
            raise ServerIdentityRefused("Give your own credentials; this server lends none.")

        def build() -> Built:
            return spec.build(credentials), credentials.url()

        if cache is not None:
            built = await cache.get_or_build(key, build)
        else:  # SDK clients read files and environment as they are made: off the loop
            built = await asyncio.to_thread(build)
    adapter, url = built
    if url:  # checked at every use: the name may resolve elsewhere now
        await netguard.check_url(url, allow_private=allow_private_urls)
    return adapter


async def reencrypt(repos: Repositories, keys: KeyRing, clock: Clock) -> int:
    """Rewrite every credential encrypted with an older key under the current one."""
    rewritten = 0
    for old_key in keys.key_ids:
        if old_key == keys.current_id:
            continue
        cursor: str | None = None
        while True:
            batch, cursor = await repos.provider_settings.encrypted_with(old_key, cursor)
            for settings in batch:
                data = associated_data(settings.user_email, settings.provider_name)
                plaintext = keys.decrypt(settings.encrypted_credentials, data)
                fresh = settings.model_copy(
                    update={
                        "encrypted_credentials": keys.encrypt(plaintext, data),
                        "key_id": keys.current_id,
                        "updated_at": datetime.fromtimestamp(clock.now(), tz=UTC),
                    }
                )
                try:
                    await repos.provider_settings.replace_ciphertext(settings, fresh)
                    rewritten += 1
                except ConditionFailed:
                    pass  # changed meanwhile, so written with the current key already
            if cursor is None:
                break
    return rewritten
